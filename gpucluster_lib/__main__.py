from gpucluster_lib.cli import main

raise SystemExit(main())
