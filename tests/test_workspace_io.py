"""One way for the host to touch a workspace (issue #22): no file operation outside runners/wsfs.py.

Every ``open``/``read_text``/``write_text``/``chmod``/``unlink``/``mkdir``/``rmtree``... in the product
packages must either go through :mod:`runners.wsfs` or sit in a function listed below with the
reason its paths are provably not a workspace's (ARCS_HOME, the operator's own files, package data,
/proc, folders ARCS created outside any workspace). A new direct file operation fails this test
until it is routed through wsfs or listed here with its reason; an entry that no longer covers a
call fails it too, so the list cannot rot.
"""

from __future__ import annotations

from pathlib import Path

from tests.workspace_io import FileCall, file_calls, product_modules, violations

ROOT = Path(__file__).resolve().parent.parent

ALLOWED: dict[str, str] = {
    # --- ARCS's own home, state and caches (ARCS_HOME, the index folder, the model cache)
    "bot/dashboard/queries_detail.py::read_trace": "a trace under ARCS's traces folder (resolved inside it)",
    "bot/dashboard/local.py::local_store": "the local dashboard's database under ARCS_HOME",
    "bot/dashboard/local.py::_read_trace": "a trace file under ARCS's traces folder (links and huge files skipped)",
    "bot/dashboard/local.py::copy_action_trace": "the Action's trace (RUNNER_TEMP) copied into ARCS's traces folder",
    "jobs/fix_kind.py::read_fix_kind": "a trace under ARCS's traces folder (resolved inside it, size-capped)",
    "bot/doctor.py::_indexed_chunks": "an index manifest under ARCS_HOME",
    "bot/doctor.py::_locked": "the index's lock file under ARCS_HOME",
    "bot/store/store.py::create_store_engine": "the SQLite database's folder (settings)",
    "bot/store/store.py::_migration_lock": "the database's migration lock file (settings)",
    "bot/web/session_key.py::_read": "the session key under ARCS_HOME",
    "bot/web/session_key.py::shared_session_key": "the session key under ARCS_HOME",
    "bot/web/setup.py::write_credentials": "ARCS_HOME, created 0700",
    "bot/web/setup.py::_write_private": "the App's credentials under ARCS_HOME",
    "jobs/engine.py::execute": "the trace file (traces folder or the operator's --trace-out)",
    "jobs/locks.py::_file_lock": "lock files under ARCS_HOME",
    "jobs/run.py::_temporary_dir": "ARCS_HOME/work, ARCS's scratch parent",
    "jobs/attempt.py::repair": "creates the empty clone target in a fresh ARCS scratch folder",
    "jobs/index_jobs.py::refresh_index": "creates the empty clone target in a fresh ARCS scratch folder",
    "bot/github/git.py::clone_at_sha": "creates the (empty, checked) clone destination ARCS chose",
    "runners/distfetch.py::safe_extract": "unpacks a dependency's archive into a new folder of ARCS's distribution cache",
    "runners/distfetch.py::safe_extract.write": "one checked member, created exclusively under that folder",
    "runners/distfetch.py::_download": "the archive file in ARCS's distribution cache",
    "runners/distfetch.py::fetch": "the per-version folder and its marker in ARCS's distribution cache",
    "runners/distfetch.py::read_texts": "source texts of an unpacked dependency in that cache (links skipped)",
    "indexing/embed.py::CachedEmbedder.__init__": "the embedding cache folder under ARCS_HOME",
    "indexing/hierarchy.py::CachedSummarizer.__init__": "the summary cache folder under ARCS_HOME",
    "indexing/index.py::RepoIndex._snapshot_store": "the index's own JSON under the index folder",
    "indexing/index.py::RepoIndex.load_manifest": "the index manifest under the index folder",
    "indexing/index.py::RepoIndex.refresh": "removes the index manifest under the index folder",
    "indexing/manifest.py::write_atomic": "the index manifest under the index folder",
    "indexing/onnx_embed.py::build_graph": "the built model graph under ARCS_HOME's cache",
    "indexing/onnx_embed.py::quantize_graph": "the exported model folder under ARCS_HOME",
    "indexing/retention.py::drop_repo_index": "index files under the index folder",
    "indexing/retention.py::leftover_checkout_ids": "index manifests under the index folder",
    "indexing/snapshot.py::save": "index snapshots under the index folder",
    "indexing/store.py::QdrantStore.open_at": "the vector store's folder under the index folder",
    # --- files the operator names (CLI arguments, settings, the Actions runner's files)
    "bot/action/env.py::_read_event": "GITHUB_EVENT_PATH, written by the Actions runner",
    "bot/action/run.py::write_results": "GITHUB_STEP_SUMMARY / GITHUB_OUTPUT of the Actions runner",
    "bot/cli/context.py::read_secrets_file": "the operator's secrets file (CLI argument)",
    "bot/cli/fix_cmd.py::run_fix": "the operator's --issue-file",
    "bot/cli/test_cmd.py::run_triage": "the operator's log file (CLI argument)",
    "bot/github/auth.py::AppCredentials.from_settings": "the App's private key path (settings)",
    "bot/web/setup.py::load_manifest": "the App manifest shipped with ARCS or named by the operator",
    "bot/envdoc.py::main": "ARCS's own docs/env.md (a developer tool)",
    "bot/config_schema.py::main": "ARCS's own docs/arcs.schema.json (a developer tool)",
    "jobs/replay.py::replay": "the trace file the operator replays",
    # --- data files shipped inside ARCS's packages
    "jobs/repair/pricing.py::load_price_table": "the price table shipped with ARCS",
    "jobs/repair/threats.py::load_rules": "the patch threat rule table shipped with ARCS",
    "jobs/repair/prompts/__init__.py::load_prompt": "prompt files shipped with ARCS",
    "jobs/repair/tier0/formatters.py::_table": "the formatter table shipped with ARCS",
    "jobs/repair/tier0/mutations.py::_operator_table": "the operator table shipped with ARCS (operators.json)",
    "indexing/chunker.py::_query": "tree-sitter queries shipped with ARCS",
    "indexing/languages.py::_table": "the language table shipped with ARCS",
    # --- the kernel, and folders ARCS created outside every workspace
    "runners/egress.py::host_addresses": "/proc/net",
    "runners/limits.py::process_tree": "/proc/<pid>/stat and cmdline",
    "runners/cgroups.py::RunCgroup.pids": "the run's cgroup under /sys/fs/cgroup (ARCS created it)",
    "runners/cgroups.py::RunCgroup.usage": "the run's cgroup counters under /sys/fs/cgroup",
    "runners/cgroups.py::_mounts": "/proc/self/mountinfo",
    "runners/cgroups.py::_own_paths": "/proc/self/cgroup",
    "runners/cgroups.py::_prepare_v2": "cgroup v2 controller files of ARCS's own group",
    "runners/cgroups.py::_evacuate": "cgroup.procs of ARCS's own group",
    "runners/cgroups.py::_mkdir": "creates ARCS's cgroup folders under /sys/fs/cgroup",
    "runners/cgroups.py::_rmdir": "removes ARCS's cgroup folders under /sys/fs/cgroup",
    "runners/cgroups.py::_write": "writes cgroup control files of ARCS's own groups",
    "runners/cgroups.py::_keyed": "reads cgroup keyed files (memory.events, cpu.stat) of ARCS's groups",
    "runners/uids.py::UidLeases._prepare": "the uid lease folder (/run/arcs-sandbox/uids, ARCS's own)",
    "runners/uids.py::UidLeases._try_lock": "a uid lease file in that folder",
    "runners/uids.py::UidLeases.release": "a uid lease file in that folder",
    "runners/egress_session.py::EgressSession.__enter__": "the egress folder ARCS creates (mkdtemp)",
    "runners/egress_proxy.py::EgressProxy.start.run": "the proxy's socket in that egress folder",
    "runners/egress_relay.py::main": "/dev/null, inside the sandbox",
    "runners/sandbox.py::_stage_etc": "copies of host /etc entries into ARCS's staging folder",
    "runners/workspace.py::default_root": "the workspace root itself (ARCS's, checked private)",
    "runners/workspace.py::ephemeral_workspace": "the workspace root the operator configured",
    "runners/workspace.py::private_folder": "the workspace root the operator configured",
    # --- not files at all: methods that happen to be called ``open``
    "jobs/index_jobs.py::RepoIndexService.open_for_attempt": "IndexHandle.open(), not a file",
    "jobs/repair/tools.py::RepoToolBox.call": "the tool box's own open(path, start, end) tool",
    # --- workspace touches that are not (yet) through wsfs, each with why it is safe
    "runners/workspace.py::copy_tree": (
        "only when GNU cp is missing (not on Linux): copytree(symlinks=True) copies links as links "
        "into a new folder and refuses FIFOs (shutil.SpecialFileError)"
    ),
    "jobs/fakes.py::FakeGitHubGateway.clone": "a test double writing its scripted files into a fresh folder",
}


def _calls() -> list[FileCall]:
    return [c for rel, source in product_modules(ROOT) for c in file_calls(source, rel)]


def test_every_file_operation_goes_through_wsfs_or_is_listed_with_its_reason() -> None:
    bad, stale = violations(_calls(), ALLOWED)
    assert not bad, "file operations outside runners/wsfs.py (route them through it, or list why not):\n" + (
        "\n".join(f"  {c.path}:{c.line} {c.call} in {c.scope}" for c in bad)
    )
    assert not stale, f"allowlist entries that cover no file operation any more: {stale}"
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_checker_finds_direct_file_operations() -> None:
    # A snippet as a hostile-repository bug would look: each line touches a workspace path directly.
    snippet = (
        "import os, shutil\n"
        "from pathlib import Path\n\n"
        "def install(ws: Path) -> None:\n"
        "    (ws / '.arcs/hang').mkdir(parents=True, exist_ok=True)\n"
        "    (ws / '.arcs/hang/p.py').write_text('x')\n"
        "    (ws / '.arcs/hang').chmod(0o777)\n"
        "    (ws / '.arcs/hang/events.jsonl').unlink(missing_ok=True)\n\n"
        "class Reader:\n"
        "    def read(self, ws: Path) -> str:\n"
        "        os.chmod(ws, 0o777)\n"
        "        shutil.rmtree(ws / 'x')\n"
        "        Path(ws / 't').replace(ws / 'u')\n"
        "        with open(ws / 'log') as f:\n"
        "            return f.read() + (ws / 'go.mod').read_text()\n"
    )
    found = file_calls(snippet, "runners/evil.py")
    assert [(c.scope, c.call) for c in found] == [
        ("install", ".mkdir"),
        ("install", ".write_text"),
        ("install", ".chmod"),
        ("install", ".unlink"),
        ("Reader.read", "os.chmod"),
        ("Reader.read", "shutil.rmtree"),
        ("Reader.read", ".replace"),
        ("Reader.read", "open"),
        ("Reader.read", ".read_text"),
    ]
    bad, stale = violations(found, {"runners/evil.py::Reader.read": "listed", "runners/gone.py::f": "old"})
    assert {c.scope for c in bad} == {"install"}
    assert stale == ["runners/gone.py::f"]


def test_the_checker_leaves_alone_what_is_not_a_file_operation() -> None:
    snippet = (
        "from runners import wsfs\n\n"
        "def f(ws, s, RepoIndex):\n"
        "    wsfs.write_text(ws, 'a', 'b')\n"
        "    wsfs.read_text(ws, 'a')\n"
        "    s.replace('a', 'b')\n"
        "    RepoIndex.open(ws)\n"
        "    ws.exists(); ws.stat(); ws.is_file()\n"
    )
    assert file_calls(snippet, "runners/ok.py") == []
