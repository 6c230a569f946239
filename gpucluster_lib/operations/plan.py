"""The operations stage: the software-stack, security and data-management plans of one design."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.operations.dataplan import DataPlan, plan_data
from gpucluster_lib.operations.security import SecurityPlan, plan_security
from gpucluster_lib.operations.stack import StackPlan, plan_stack
from gpucluster_lib.scenario import Scenario


@dataclass
class OperationsPlan:
    """The stack, security and data plans; ``findings`` gathers theirs."""

    stack: StackPlan
    security: SecurityPlan
    data: DataPlan

    @property
    def findings(self) -> list[Finding]:
        return sort_findings([*self.stack.findings, *self.security.findings, *self.data.findings])

    def to_dict(self) -> dict[str, Any]:
        return {"stack": self.stack.to_dict(), "security": self.security.to_dict(), "data": self.data.to_dict(),
                "findings": [f.to_dict() for f in self.findings]}


def plan_operations(scenario: Scenario, catalog: Any, *, hardware: Any, node: Any, network: Any, storage: Any,
                    serving: Any = None, reliability: Any = None) -> OperationsPlan:
    """The three plans of a design, from its stages (see each module for the rules)."""
    stack = plan_stack(scenario, catalog, hardware=hardware, node=node, network=network, serving=serving)
    data = plan_data(scenario, storage=storage, reliability=reliability)
    security = plan_security(scenario, hardware=hardware, network=network, storage=storage, stack=stack, data=data)
    return OperationsPlan(stack, security, data)
