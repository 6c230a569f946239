"""Stage results shared between the designs of many points (a sweep, a fit).

A stage's result depends only on the scenario fields it declares (``design.STAGES``) and the
results of its upstream stages, so two points with equal inputs for a stage share its result:
a sweep over the energy price computes the topology once. The key of a stage is its declared
scenario values plus the keys of its upstream stages; the catalogue is fixed per cache.
"""

from __future__ import annotations

from typing import Any

from gpucluster_lib.catalog import Catalog
from gpucluster_lib.design import STAGES, Design, scenario_input
from gpucluster_lib.scenario import Scenario


def _freeze(value: Any) -> Any:
    """A hashable stand-in of a scenario value (its ``repr`` when it holds lists or dicts)."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


class StageCache:
    """Designs that reuse the stage results of earlier designs with equal stage inputs.

    ``max_entries`` bounds the results kept; when full the cache starts afresh (a sweep walks
    its grid in order, so the results worth keeping are the recent ones).
    """

    def __init__(self, catalog: Catalog, max_entries: int = 20_000) -> None:
        self.catalog = catalog
        self.max_entries = max_entries
        self._ids: dict[tuple[Any, ...], int] = {}
        self._results: dict[int, Any] = {}
        self.hits = 0
        self.misses = 0

    def design(self, scenario: Scenario) -> Design:
        """The design of ``scenario``, with every stage already computed for equal inputs."""
        if len(self._ids) > self.max_entries:
            self._ids.clear()
            self._results.clear()
        keys: dict[str, int] = {}
        reuse: dict[str, Any] = {}
        for name, st in STAGES.items():
            k = (name, tuple(_freeze(scenario_input(scenario, s)) for s in st.sections),
                 tuple(keys[u] for u in st.upstream))
            sid = self._ids.get(k)
            if sid is None:
                sid = self._ids[k] = len(self._ids)
            keys[name] = sid
            if sid in self._results:
                reuse[name] = self._results[sid]
        d = Design(scenario, self.catalog, _reuse=reuse)
        d._explore_keys = keys  # type: ignore[attr-defined]
        return d

    def keep(self, d: Design) -> None:
        """Remember the stages ``d`` computed itself, for the next designs."""
        keys = getattr(d, "_explore_keys", None)
        if keys is None:
            return
        for name in d.computed:
            self._results[keys[name]] = d.stage(name)
        self.misses += len(d.computed)
        self.hits += sum(1 for n in keys if d.is_computed(n)) - len(d.computed)
