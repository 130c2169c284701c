"""The workaround: a fragment rerun whose page is not the page the session last ran is dropped before it runs.
(The app's own copy, with its explanation: ui/fragment_guard.py of Attention Explorer.)"""
from streamlit.runtime.scriptrunner.script_runner import ScriptRunner

_run_script = ScriptRunner._run_script


def _guarded(self, rerun_data):
    current = self._pages_manager.current_page_script_hash
    if rerun_data.fragment_id_queue and rerun_data.page_script_hash and current \
            and rerun_data.page_script_hash != current:
        return
    _run_script(self, rerun_data)


def install():
    if ScriptRunner._run_script is _run_script:
        ScriptRunner._run_script = _guarded
