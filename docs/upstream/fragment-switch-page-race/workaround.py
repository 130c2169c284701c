"""The workaround (the app's own copy, with its explanation: ui/fragment_guard.py of Attention Explorer):
- a fragment rerun whose page is not the page the session last ran is dropped before it runs;
- a fragment rerun folded into a pending full run leaves that run's page and query as they were."""
from dataclasses import replace

from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests, ScriptRequestType

_run_script = ScriptRunner._run_script
_fold = ScriptRequests._request_rerun_locked


def _full(d) -> bool:
    return not (d.fragment_id or d.fragment_id_queue or d.is_fragment_scoped_rerun)


def _guarded_run(self, rerun_data):
    current = self._pages_manager.current_page_script_hash
    if rerun_data.fragment_id_queue and rerun_data.page_script_hash and current \
            and rerun_data.page_script_hash != current:
        return
    _run_script(self, rerun_data)


def _guarded_fold(self, new_data):
    pending = self._rerun_data if self._state == ScriptRequestType.RERUN else None
    accepted = _fold(self, new_data)
    if accepted and pending is not None and _full(pending) and not _full(new_data):
        self._rerun_data = replace(self._rerun_data, page_script_hash=pending.page_script_hash,
                                   page_name=pending.page_name, query_string=pending.query_string,
                                   is_auto_rerun=pending.is_auto_rerun)
    return accepted


def install():
    if ScriptRunner._run_script is _run_script:
        ScriptRunner._run_script = _guarded_run
        ScriptRequests._request_rerun_locked = _guarded_fold
