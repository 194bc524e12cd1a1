"""Held-out deployability set 43, written blind: 18 defects and 8 correct variants of examples/single-region.

Run it from the repository root with ``.venv/bin/python -m benchmarks.heldout_deployability_43.run``; the runner
(``benchmarks.heldout_runner``) reads ``cases.yaml`` beside this file and reports what the offline checks say of
each case. The blind run was on main at 5c269e5 (the set merged onto aa382aa, set 42's fixes in); ``JUDGEMENT`` is
the reading of its messages.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.heldout_runner import HeldOutSet, main

JUDGEMENT: dict[str, tuple[bool, str]] = {
    "restarter_role_deployments_in_core_api_group": (
        True,
        'rbac-rule-resolves: deployments under apiGroups [""], served in "apps": the rule grants nothing',
    ),
    "restarter_pod_spec_without_service_account_token": (
        True,
        "rbac-grant-token: the pods mount no service-account token, so the in-cluster client fails",
    ),
    "restarter_tmp_size_limit_megabytes": (
        True,
        "api-validation: emptyDir sizeLimit '64MB' is not a resource quantity",
    ),
    "restarter_node_selector_on_node_role_label": (
        True,
        "node-capacity: no node group's labels match the pod's node selector",
    ),
    "serving_lifecycle_since_pushed_without_count_unit": (
        True,
        "aws-api-values: a sinceImagePushed lifecycle rule without countUnit (InvalidParameterException)",
    ),
    "admin_access_entry_for_assumed_role_session": (
        True,
        "access-entry-request: the principal is an STS assumed-role session, not an IAM role",
    ),
}

if __name__ == "__main__":
    main(HeldOutSet(Path(__file__).resolve().parent, 43, JUDGEMENT))
