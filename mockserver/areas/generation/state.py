"""Generation: paid work filed under a project of the workspace.

Every generation call names its project; a project the workspace does not own answers
``404 not_found`` and the work is never filed elsewhere. A call is priced from the capability
table (credits.py) and charged in the same step that creates its job, so a refused call
(402, 403, 404, 409, 503) creates nothing and charges nothing.
"""

from __future__ import annotations

from mockserver.areas.projects.state import get_project
from mockserver.call import Call


def filed_project(call: Call) -> str:
    """The request's project id, checked to belong to the workspace."""
    return get_project(call, call.body["projectId"])["id"]
