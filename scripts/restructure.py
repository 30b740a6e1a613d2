"""Move maps_autogen/ into one package per layer and tests/ into folders mirroring it (issue 37).

Run from a clean repository root: `python scripts/restructure.py [--place OLD=NEW ...] [--dry-run]`.
Plain Python 3.11, standard library only (ruff from .venv, when there, tidies the imports it rewrote).

1. Every module of maps_autogen/ is placed by MODULES (old dotted name relative to maps_autogen →
   new one) and moved with `git mv`; each new layer package gets an `__init__.py` whose docstring
   (PACKAGES) says what the layer owns. Packages that already exist (eval, view, benchmarks, local,
   paper, defaults, inspect_tasks) move whole, their modules keeping their names.
2. Every reference to a moved module is rewritten in the whole repository, in one pass per file
   (longest old name first, word boundaries): dotted names (imports, monkeypatch targets, `-m`
   command lines, entry points, package-data keys) and paths (`maps_autogen/config.py`).
   `from maps_autogen import chat` becomes `from maps_autogen.orchestration import _chat as chat`.
3. In the package, an import of a name from another layer's private module imports it from that
   layer's package (`from maps_autogen.settings import load_config`); each layer's `__init__`
   re-exports those names lazily (PEP 562 `__getattr__`, plus an `if TYPE_CHECKING:` block for
   mypy), so importing a package loads nothing until a name is used.
4. Tests move per TESTS (file → folder, or folder/new_name.py for files named after the work that
   made them), shared helper modules per HELPERS into tests/helpers/, and conftest.py's plain
   helper functions and constants into tests/helpers/common.py (fixtures and hooks stay in the
   root conftest.py); `tests.x` references are rewritten like modules. Each test folder gets an
   `__init__.py`.
5. Paths built from `__file__` in a moved file (`Path(__file__).parents[1]`) are deepened by the
   levels the file moved down. FIXUPS (exact text replacements) then make the few hand changes a
   table cannot express; a FIXUP whose text is not found stops the script.

Before changing anything it lists every module or test file no table places (and exits 1), and
refuses a dirty tree. A new file from another branch: add it to MODULES / TESTS, or pass
`--place maps_autogen/new_mod.py=model._new_mod` / `--place tests/test_new.py=model`.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "maps_autogen"

# What each layer package owns (its __init__'s docstring), in layer order, lowest first.
PACKAGES: dict[str, str] = {
    "_util": "Helpers below every layer, with no domain of their own: the error types, text made safe "
             "(valid UTF-8, bounded nesting), secrets masked, size limits, interrupts (SIGINT/SIGTERM), "
             "the lifeline that ends our helper processes, the run lock, and the one atomic writer.",
    "settings": "What a run is told to do: agents.yaml and OAI_CONFIG_LIST files, the team (its steps "
                "and roles), the prompt files, which endpoint and model each step talks to, and the "
                "built-in defaults (package data in defaults/).",
    "records": "The schema of every file a run writes (typed pydantic models and the vocabularies as "
               "Literals), the typed readers, the one writer of a run folder's files, and the paths "
               "inside a run folder kept inside it. It sits right after settings (the guide's list "
               "puts records after orchestration) because records are made typed where they are "
               "made, in model and orchestration, so the schema must be below both.",
    "problem": "A problem and its images (read, fetched from public addresses only, bounded), and what "
               "every benchmark's data side builds on: the task protocol, rows read into problems, and "
               "the hub's data sets.",
    "model": "Talking to models: the OpenAI-compatible client, the checks on a service's answers, the "
             "reply cache, replica pools, token accounting, and the embedded local model (local/).",
    "orchestration": "The MAPS chat: AG2 behind one module and its model-client adapter, the Manager's "
                     "pure flow and verdict rules, each step's inputs, the chat and its agents, a "
                     "person in the chat, the run folder's transcript, and one solve.",
    "scoring": "Scoring answers: the one accuracy tally, `maps score`, and the benchmarks (registry, "
               "shared rules, one package per benchmark with its task and official-conformant scorer).",
    "report": "Reading finished or running runs: `maps report` and its figures, the paper's tables, "
              "the terminal's live view, replies laid out for reading, and `maps view` (view/).",
    "api": "The Python API: solve, evaluate, Problem and the results they return.",
}

# old module (relative to maps_autogen, dotted) → new module. A package entry moves the whole folder
# (after its own entries that go elsewhere). "" is maps_autogen/__init__.py.
MODULES: dict[str, str] = {
    "": "",
    # _util
    "errors": "_util._errors",
    "text": "_util._text",
    "redact": "_util._redact",
    "limits": "_util._limits",
    "interrupts": "_util._interrupts",
    "lifeline": "_util._lifeline",
    "runlock": "_util._runlock",
    "artifacts": "_util._artifacts",
    "version": "_util._version",
    # settings
    "config": "settings._config",
    "config_list": "settings._config_list",
    "team": "settings._team",
    "roles": "settings._roles",
    "prompts": "settings._prompts",
    "endpoints": "settings._endpoints",
    "options": "settings._options",
    "defaults": "settings.defaults",
    # records (safe_paths reads the run folder's layout names from the schema: records, not _util)
    "records": "records._schema",
    "chat_records": "records._chat_records",
    "settings_record": "records._settings_record",
    "run_files": "records._run_files",
    "safe_paths": "records._safe_paths",
    # problem
    "problem": "problem._problem",
    "images": "problem._images",
    "fetch": "problem._fetch",
    "benchmarks.tasks": "problem._tasks",
    "benchmarks.rows": "problem._rows",
    "benchmarks.hub": "problem._hub",
    # model
    "client": "model._client",
    "service_answers": "model._service_answers",
    "cache": "model._cache",
    "pool": "model._pool",
    "tokens": "model._tokens",
    "backends": "model._backends",
    "local": "model.local",
    # orchestration
    "ag2": "orchestration._ag2",
    "llm": "orchestration._ag2_client",
    "flow": "orchestration._flow",
    "verdict": "orchestration._verdict",
    "role_inputs": "orchestration._role_inputs",
    "chat": "orchestration._chat",
    "chat_agents": "orchestration._chat_agents",
    "human": "orchestration._human",
    "human_chat": "orchestration._human_chat",
    "human_desk": "orchestration._human_desk",
    "transcript": "orchestration._transcript",
    "solving": "orchestration._solving",
    # scoring
    "tally": "scoring._tally",
    "scoring": "scoring._score",
    "benchmarks": "scoring.benchmarks",
    # eval: as today
    "eval": "eval",
    # report
    "report": "report._report",
    "figures": "report._figures",
    "paper": "report.paper",
    "live": "report._live",
    "replies": "report._replies",
    "view": "report.view",
    # api, cli
    "api": "api._api",
    "cli": "cli",  # already one module per command, its __init__ the group and main()
    # loaded by Inspect only (its entry point names it): stays at the top
    "inspect_tasks": "inspect_tasks",
}

# Shared test helper modules → tests/helpers/ (conftest.py's helpers go to tests/helpers/common.py).
HELPERS = ("fake_openai", "inprocess", "eval_fixtures", "view_fixtures", "chromium", "llama_server",
           "real_servers", "local_schema")

# test file (stem) → folder under tests/, or "folder/new_stem" for a file renamed by its subject.
TESTS: dict[str, str] = {
    "test_api_commands": "api",
    "test_cached_tokens": "model",
    "test_estimate_image_headers": "eval",
    "test_expected_time": "orchestration",
    "test_fixture_servers_die_with_tests": "project",
    "test_inspect_lazy_samples": "inspect_tasks",
    "test_options_declaration": "cli",
    "test_package_version": "project",
    "test_prompt_layouts": "orchestration",
    "test_records_typed_where_made": "records",
    "test_rollback_shows_what_was_sent": "report",
    "test_stale_temporary_files": "_util",
    "test_symbolic_cpu_time_limit": "scoring",
    "test_tokens_per_correct_answer": "report",
    "test_unusable_reply_retry_changed": "model",
    "test_accuracy_intervals": "eval",
    "test_ag2_import": "orchestration",
    "test_ag2_surface": "orchestration",
    "test_agent_reuse": "orchestration",
    "test_api_errors": "api",
    "test_api_one_pass_without": "api",
    "test_benchmark_replicas": "e2e",
    "test_cli_environment_variables": "cli",
    "test_config": "settings",
    "test_config_command": "cli",
    "test_config_errors_first_hour": "settings/test_config_mistakes",
    "test_config_habits": "settings",
    "test_config_list_keys": "settings",
    "test_conformance_data_missing": "scoring",
    "test_conformance_emma": "scoring",
    "test_conformance_mathvista": "scoring",
    "test_conformance_newest_scoring": "scoring",
    "test_conformance_olympiadbench": "scoring",
    "test_critic_prompt": "orchestration",
    "test_custom_benchmark": "e2e",
    "test_custom_scorer_phrasings": "scoring",
    "test_damaged_records": "records",
    "test_default_copies": "settings",
    "test_emma_scoring": "scoring",
    "test_eval_announcement": "eval",
    "test_eval_cli": "eval",
    "test_eval_processes": "eval",
    "test_eval_tasks": "e2e",
    "test_examples_and_prompts": "e2e",
    "test_extractor_version": "scoring",
    "test_failed_run_no_verdict": "e2e",
    "test_figure6": "report",
    "test_first_hour_demo": "cli/test_solve_gold_answer_and_exits",
    "test_flow": "orchestration",
    "test_full_disk": "e2e",
    "test_gateway_errors": "model",
    "test_harness_results": "eval",
    "test_honest_eval": "eval",
    "test_honest_solve": "orchestration",
    "test_hostile": "e2e",
    "test_human_answers": "orchestration",
    "test_human_api": "api",
    "test_human_flow": "orchestration",
    "test_human_page": "report",
    "test_human_terminal": "cli",
    "test_image_cost": "eval",
    "test_image_limit_per_request": "model",
    "test_images": "problem",
    "test_import_layers": "project",
    "test_inprocess": "project",
    "test_inspect_scorer_bounds": "inspect_tasks",
    "test_inspect_sent": "inspect_tasks",
    "test_inspect_tasks": "inspect_tasks",
    "test_inspect_unusable_replies": "inspect_tasks",
    "test_layout": "project/test_house_rules",
    "test_lazy_images": "eval",
    "test_limits": "_util",
    "test_local_integration": "model",
    "test_local_server": "model",
    "test_mathvista_extract": "scoring",
    "test_mathvista_programs": "scoring",
    "test_mathvista_scoring": "scoring",
    "test_merge_completeness": "eval",
    "test_near_copy_secrets": "_util",
    "test_olympiadbench_scoring": "scoring",
    "test_paper_fidelity": "orchestration",
    "test_paper_switches": "orchestration",
    "test_perf_cpu": "project",
    "test_perf_local_model": "project",
    "test_perf_scripts": "project",
    "test_pool": "model",
    "test_pool_failover": "model",
    "test_pool_real_server": "model",
    "test_pool_streams": "model",
    "test_private_urls": "problem",
    "test_problem_file_confined": "problem",
    "test_process_lifeline": "_util",
    "test_program_reader_bounds": "scoring",
    "test_program_reader_statements": "scoring",
    "test_prompt_prefix": "model",
    "test_python_api": "api",
    "test_readable_replies": "report",
    "test_readme_commands": "project",
    "test_real_servers": "e2e",
    "test_records": "records",
    "test_redact_cost": "_util",
    "test_renamed_step_notes": "orchestration",
    "test_renamed_team": "e2e",
    "test_report": "report",
    "test_report_figures": "report",
    "test_report_rows": "report",
    "test_rerun_material": "orchestration",
    "test_resume_sees_data": "eval",
    "test_resume_settings": "eval",
    "test_review_fixes": "eval/test_eval_baselines_ablations_and_shards",
    "test_role_inputs": "orchestration",
    "test_rollback_rules": "orchestration",
    "test_run_overheads": "orchestration",
    "test_sampling_settings": "settings",
    "test_scorer_bounds": "scoring",
    "test_scoring_file": "scoring",
    "test_secrets_in_urls": "settings",
    "test_served_price": "model",
    "test_service_error_shapes": "model",
    "test_setup_browser_script": "project",
    "test_slurm_sharded_eval": "e2e",
    "test_solve_cli": "cli",
    "test_solve_errors": "cli",
    "test_solve_estimate": "cli",
    "test_startup_imports": "project",
    "test_step_names_in_prompts": "orchestration",
    "test_stop_signals": "e2e",
    "test_stream_bounds": "model",
    "test_summary_estimated_tokens": "eval",
    "test_symbolic_long_answers": "scoring",
    "test_tally": "scoring",
    "test_team": "e2e",
    "test_text_only_endpoint": "model",
    "test_tokens": "model",
    "test_untrusted_depth": "e2e",
    "test_untrusted_paths": "eval",
    "test_untrusted_text": "_util",
    "test_usage_that_lies": "model",
    "test_validate_rows": "problem",
    "test_verdict": "orchestration",
    "test_view": "report",
    "test_view_confined": "report",
    "test_view_export": "report",
    "test_view_page_cache": "report",
    "test_view_pages_agree": "report",
    "test_view_renamed_team": "report",
    "test_view_serve_cache": "report",
    "test_view_served_model": "report",
    "test_view_server": "report",
    "test_view_server_hardening": "report",
    "test_view_templates": "report",
    "test_wheel_install": "project",
}

# Files (other than .py modules) the rewrite reads: the whole repository's text, these suffixes.
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".sh", ".cfg", ".ini", ".yaml", ".yml", ".json", ".html", ""}
SELF = "scripts/restructure.py"  # its tables name the old modules: never rewritten
SKIP_DIRS = {".git", ".venv", ".venv-litellm", "__pycache__", "runs", "node_modules", "fixtures"}

# Names a layer package re-exports although no other package imports them (yet) at the move.
EXTRA_EXPORTS: dict[str, dict[str, str]] = {
    "settings": {"HumanWhen": "_config"},  # moved there by a FIXUP below
}

# Hand changes a table cannot express: (file after the move, exact old text, new text).
FIXUPS: list[tuple[str, str, str]] = [
    # a path of the package built from Path("maps_autogen") (JOINED reads quoted parts only)
    ("tests/orchestration/test_step_names_in_prompts.py", 'Path("maps_autogen") / "defaults" / "mine"',
     'Path("maps_autogen") / "settings" / "defaults" / "mine"'),
    # the conformance test files named by an f-string
    ("tests/scoring/test_conformance_newest_scoring.py", 'REPO / "tests" / f"test_conformance_',
     'REPO / "tests" / "scoring" / f"test_conformance_'),
    # the AG2 surface test finds AG2's users by what they import from the one AG2 module
    ("tests/orchestration/test_ag2_surface.py", 'imported_from(tree, "ag2")', 'imported_from(tree, "_ag2")'),
    ("tests/orchestration/test_ag2_surface.py", 'imported_from(tree, "ag2")', 'imported_from(tree, "_ag2")'),
    ("tests/orchestration/test_ag2_surface.py", '{f"maps_autogen.{n}" for n in names}',
     '{f"maps_autogen.orchestration.{n}" for n in names}'),
]


def fail(message: str) -> None:
    print(message, file=sys.stderr)
    raise SystemExit(1)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


# --- placing ---------------------------------------------------------------------------------

def old_modules(root: Path) -> dict[str, Path]:
    """{dotted name relative to maps_autogen: file} for every module and package of maps_autogen/."""
    found: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(root / PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def new_name(old: str, table: dict[str, str]) -> str | None:
    """The new dotted name of an old module: its own entry, else its nearest placed package's."""
    if old in table:
        return table[old]
    parts = old.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:cut])
        if parent in table:
            return ".".join(filter(None, [table[parent], *parts[cut:]]))
    return None


def test_files(root: Path) -> list[Path]:
    return sorted(path for path in (root / "tests").glob("*.py") if path.name not in {"__init__.py", "conftest.py"})


def test_destination(stem: str) -> str | None:
    """tests-relative new path without suffix (helpers/fake_openai, eval/test_eval_cli), or None."""
    if stem in HELPERS:
        return f"helpers/{stem}"
    place = TESTS.get(stem)
    if place is None:
        return None
    return place if "/" in place else f"{place}/{stem}"


def unplaced(root: Path, table: dict[str, str]) -> list[str]:
    missing = [f"{PACKAGE}/{path.relative_to(root / PACKAGE)}" for old, path in old_modules(root).items()
               if new_name(old, table) is None]
    missing += [f"tests/{path.name}" for path in test_files(root) if test_destination(path.stem) is None]
    return missing


# --- rewriting references ----------------------------------------------------------------------

def renames(root: Path, table: dict[str, str]) -> dict[str, str]:
    """Old dotted name → new dotted name, for every moved module and test file (full names)."""
    result: dict[str, str] = {}
    for old in old_modules(root):
        new = new_name(old, table)
        assert new is not None
        if old and old != new:
            result[f"{PACKAGE}.{old}"] = f"{PACKAGE}.{new}" if new else PACKAGE
    for path in test_files(root):
        destination = test_destination(path.stem)
        assert destination is not None
        result[f"tests.{path.stem}"] = "tests." + destination.replace("/", ".")
    result["tests.conftest"] = "tests.helpers.common"  # the helpers `from tests.conftest import` takes
    return result


def path_renames(root: Path, table: dict[str, str], dotted: dict[str, str]) -> dict[str, str]:
    """Old path → new path (maps_autogen/config.py, maps_autogen/view, tests/test_flow.py)."""
    result: dict[str, str] = {}
    modules = old_modules(root)
    for old, new in dotted.items():
        if old == "tests.conftest":
            continue
        old_path, new_path = old.replace(".", "/"), new.replace(".", "/")
        is_package = old.startswith(PACKAGE) and modules[old[len(PACKAGE) + 1:]].name == "__init__.py"
        result[old_path if is_package else old_path + ".py"] = new_path if is_package else new_path + ".py"
        if not is_package:
            result[old_path] = new_path
    return result


def replacer(mapping: dict[str, str], separator: str) -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex of every old name, longest first, at word boundaries (not inside a longer name)."""
    keys = sorted(mapping, key=len, reverse=True)
    edge = re.escape(separator)
    pattern = re.compile(rf"(?<![\w{edge}])(?:{'|'.join(re.escape(key) for key in keys)})(?![\w])")
    return pattern, mapping


def repository_files(root: Path) -> list[Path]:
    files = []
    for line in git("ls-files").splitlines():
        path = root / line
        if any(part in SKIP_DIRS for part in Path(line).parts) or not path.is_file() or line == SELF:
            continue
        if path.suffix in TEXT_SUFFIXES or path.name in {"Makefile", "run"}:
            files.append(path)
    return files


JOINED = re.compile(r'(?P<quote>["\'])(?:maps_autogen|tests)(?P=quote)(?:\s*/\s*(?P=quote)[\w.]+(?P=quote))+')


def rewrite_text(text: str, dotted: tuple[re.Pattern[str], dict[str, str]],
                 paths: tuple[re.Pattern[str], dict[str, str]]) -> str:
    for pattern, mapping in (dotted, paths):
        text = pattern.sub(lambda match, mapping=mapping: mapping[match.group(0)], text)

    def joined(match: re.Match[str]) -> str:
        """`"maps_autogen" / "defaults" / "agents.yaml"`, `"tests" / "llama_server.py"`: the parts moved."""
        quote = match.group("quote")
        path = "/".join(re.findall(rf"{quote}([\w.]+){quote}", match.group(0)))
        moved = paths[0].sub(lambda found: paths[1][found.group(0)], path)
        return f" / ".join(f"{quote}{part}{quote}" for part in moved.split("/"))

    return JOINED.sub(joined, text)


# --- imports: `from maps_autogen import chat`, and cross-package names from the package ------------

def _render(module: str, names: list[tuple[str, str | None]], indent: str) -> str:
    parts = [name if alias in (None, name) else f"{name} as {alias}" for name, alias in names]
    line = f"{indent}from {module} import {', '.join(parts)}"
    if len(line) <= 120:
        return line
    inner = "".join(f"{indent}    {part},\n" for part in parts)
    return f"{indent}from {module} import (\n{inner}{indent})"


def _package_of(file: Path, root: Path) -> str | None:
    """The first-level package a file of maps_autogen/ is in ("" for the top), None outside."""
    try:
        parts = file.relative_to(root / PACKAGE).parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 else ""


def rewrite_imports(file: Path, root: Path, text: str, new_modules: set[str], new_to_old: dict[str, str],
                    dotted_map: dict[str, str], exports: dict[str, dict[str, str]],
                    notes: list[str]) -> str:
    """Rewrites `from X import module` of moved modules, and (in the package) cross-package imports
    of a layer package's private module into imports from the package, recording the re-exports."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    importer = _package_of(file, root)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        if not (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        if indent.strip():
            continue  # `if x: from ...` on one line: left as it is
        groups: list[tuple[str, list[tuple[str, str | None]]]] = []

        def add(module: str, name: str, alias: str | None, groups: list = groups) -> None:
            if groups and groups[-1][0] == module:
                groups[-1][1].append((name, alias))
            else:
                groups.append((module, [(name, alias)]))

        changed = False
        old_parent = new_to_old.get(node.module, node.module)
        for alias in node.names:
            old_full = f"{old_parent}.{alias.name}"
            if old_full in dotted_map and dotted_map[old_full] != f"{node.module}.{alias.name}":
                target = dotted_map[old_full]  # `from maps_autogen import chat`: a module that moved
                parent, _, leaf = target.rpartition(".")
                add(parent, leaf, alias.asname or alias.name)
                changed = True
                continue
            layer = node.module.split(".")
            if (importer is not None and len(layer) == 3 and layer[1] in PACKAGES and layer[2].startswith("_")
                    and node.module in new_modules and layer[1] != importer and not alias.name.startswith("_")
                    and alias.name != "*"):
                owner = exports.setdefault(layer[1], {})
                if owner.get(alias.name, layer[2]) != layer[2]:
                    notes.append(f"{file.relative_to(root)}: {alias.name} is exported by two modules of "
                                 f"{layer[1]} ({owner[alias.name]}, {layer[2]}): imported from the module")
                    add(node.module, alias.name, alias.asname)
                    continue
                owner[alias.name] = layer[2]
                add(f"{PACKAGE}.{layer[1]}", alias.name, alias.asname)
                changed = True
                continue
            add(node.module, alias.name, alias.asname)
        if changed:
            rendered = "\n".join(_render(module, names, indent) for module, names in groups)
            edits.append((node.lineno - 1, node.end_lineno or node.lineno, rendered + "\n"))
    for start, end, replacement in sorted(edits, reverse=True):
        lines[start:end] = [replacement]
    return "".join(lines)


def package_init(name: str, names: dict[str, str]) -> str:
    doc = PACKAGES[name]
    words, wrapped, line = doc.split(), [], ""
    for word in words:
        if len(line) + len(word) + 1 > 96:
            wrapped.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    wrapped.append(line)
    docstring = '"""' + "\n".join(wrapped) + '\n"""\n'
    if not names:
        return docstring
    checking = "".join(f"    from .{module} import {export} as {export}\n"
                       for export, module in sorted(names.items(), key=lambda item: (item[1], item[0])))
    table = "".join(f"    {export!r}: {module!r},\n" for export, module in sorted(names.items()))
    return (docstring + "\nfrom __future__ import annotations\n\nimport importlib\n"
            "from typing import TYPE_CHECKING, Any\n\nif TYPE_CHECKING:\n" + checking
            + "\n# name → the private module that defines it, imported on first use (PEP 562)\n"
            + "_EXPORTS: dict[str, str] = {\n" + table + "}\n__all__ = sorted(_EXPORTS)\n\n\n"
            "def __getattr__(name: str) -> Any:\n"
            '    """A name of this package, imported from its module on first use."""\n'
            "    if name not in _EXPORTS:\n"
            '        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")\n'
            "    module = _EXPORTS[name]\n"
            '    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)\n'
            "    globals()[name] = value\n    return value\n\n\n"
            "def __dir__() -> list[str]:\n    return sorted({*globals(), *__all__})\n")


# --- moving -----------------------------------------------------------------------------------

def git_mv(root: Path, old: Path, new: Path) -> None:
    new.parent.mkdir(parents=True, exist_ok=True)
    git("mv", str(old.relative_to(root)), str(new.relative_to(root)))


def move_package(root: Path, table: dict[str, str]) -> dict[Path, int]:
    """Moves the modules; returns {new file: levels it moved down} for the `__file__` fix."""
    modules = old_modules(root)
    depth: dict[Path, int] = {}
    # single modules first (those inside a folder that moves whole included), then the folders
    singles = [old for old in modules if old in table and modules[old].name != "__init__.py"]
    folders = [old for old in modules if old in table and old and modules[old].name == "__init__.py"]
    for old in singles:
        new = table[old]
        if new == old:
            continue
        source = modules[old]
        target = root / PACKAGE / (new.replace(".", "/") + ".py")
        git_mv(root, source, target)
        depth[target] = new.count(".") - old.count(".")
    for old in sorted(folders, key=lambda name: name.count(".")):
        new = table[old]
        if new == old:
            continue
        source = root / PACKAGE / old.replace(".", "/")
        target = root / PACKAGE / new.replace(".", "/")
        git_mv(root, source, target)
        for path in target.rglob("*.py"):
            depth[path] = new.count(".") - old.count(".")
    return depth


def split_conftest(root: Path) -> None:
    """conftest.py's plain helpers and constants → tests/helpers/common.py; fixtures and hooks stay."""
    conftest = root / "tests" / "conftest.py"
    text = conftest.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    header_end = 0
    keep: list[str] = []
    move: list[str] = []
    moved_names: set[str] = set()
    for node in tree.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        segment = "".join(lines[start: node.end_lineno])
        if isinstance(node, ast.Import | ast.ImportFrom) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is tree.body[0]):
            header_end = node.end_lineno or header_end
            continue
        is_fixture = any("fixture" in ast.unparse(d) for d in getattr(node, "decorator_list", []))
        is_hook = isinstance(node, ast.FunctionDef) and node.name.startswith("pytest_")
        (keep if is_fixture or is_hook else move).append(segment)
        if not (is_fixture or is_hook):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                moved_names.add(node.name)
            elif isinstance(node, ast.Assign):
                moved_names.update(target.id for target in node.targets if isinstance(target, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                moved_names.add(node.target.id)
    header = "".join(lines[:header_end])
    helpers = root / "tests" / "helpers" / "common.py"
    helpers.parent.mkdir(parents=True, exist_ok=True)
    git("mv", "tests/conftest.py", "tests/helpers/common.py")
    body = header.replace('"""', '"""The helpers every test module uses (moved from conftest.py). ', 1)
    helpers.write_text(body + "\n\n" + "\n\n".join(segment.rstrip() + "\n" for segment in move), encoding="utf-8")
    used = sorted(name for name in moved_names if any(re.search(rf"\b{name}\b", segment) for segment in keep))
    imports = f"from tests.helpers.common import {', '.join(used)}\n" if used else ""
    conftest.write_text(header + imports + "\n\n" + "\n\n".join(segment.rstrip() + "\n" for segment in keep),
                        encoding="utf-8")
    git("add", "tests/conftest.py", "tests/helpers/common.py")


def move_tests(root: Path) -> dict[Path, int]:
    depth: dict[Path, int] = {}
    split_conftest(root)
    depth[root / "tests" / "helpers" / "common.py"] = 1
    for path in test_files(root):
        destination = test_destination(path.stem)
        assert destination is not None
        target = root / "tests" / (destination + ".py")
        git_mv(root, path, target)
        depth[target] = 1
    for folder in sorted({p.parent for p in depth}):
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
            git("add", str(init.relative_to(root)))
    return depth


def _top_level_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


# test module → the name of tests/helpers/<name>.py that takes what other tests import from it
# (default: the module's subject, test_eval_cli → eval_cli), where the default is taken.
SHARED_NAMES = {"test_real_servers": "real_server_config"}


def share_test_helpers(root: Path) -> None:
    """What one test module imports from another moves into tests/helpers/<subject>.py (the
    definitions, with the module-level names they use), imported from there by both."""
    tests = sorted(path for path in (root / "tests").rglob("test_*.py") if "helpers" not in path.parts)
    dotted = {".".join(path.relative_to(root).with_suffix("").parts): path for path in tests}
    wanted: dict[str, set[str]] = {}
    renamed: dict[str, str] = {}
    for path in tests:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in dotted:
                wanted.setdefault(node.module, set()).update(alias.name for alias in node.names)
    for module, names in sorted(wanted.items()):
        source = dotted[module]
        text = source.read_text(encoding="utf-8")
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        defined = {name: node for node in tree.body for name in _top_level_names(node)}
        moving: set[str] = set()
        queue = sorted(names)
        while queue:  # the names asked for and every module-level name they use
            name = queue.pop()
            if name in moving or name not in defined:
                continue
            moving.add(name)
            queue += [sub.id for sub in ast.walk(defined[name]) if isinstance(sub, ast.Name) and sub.id in defined]
        nodes = [node for node in tree.body if _top_level_names(node) & moving]
        header_end = max((node.end_lineno or 0) for node in tree.body
                         if isinstance(node, ast.Import | ast.ImportFrom)) if tree.body else 0
        spans = [(min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1,
                  node.end_lineno or node.lineno) for node in nodes]
        subject = SHARED_NAMES.get(source.stem, source.stem.removeprefix("test_"))
        if (root / "tests" / "helpers" / f"{subject}.py").exists():
            fail(f"tests/helpers/{subject}.py exists: name the helpers of {source.name} in SHARED_NAMES")
        helper = root / "tests" / "helpers" / f"{subject}.py"
        docstring = f'"""Shared by the tests of {source.relative_to(root)} and others: ' \
                    f'{", ".join(sorted(names))}."""\n\n'
        imports = re.sub(r'^(""".*?"""\n)', "", "".join(lines[:header_end]), flags=re.S)
        body = "\n\n".join("".join(lines[start:end]).rstrip() + "\n" for start, end in spans)
        helper.write_text(docstring + imports.lstrip("\n") + "\n\n" + body, encoding="utf-8")
        for start, end in sorted(spans, reverse=True):
            del lines[start:end]
        kept = "".join(lines)
        used = sorted(name for name in moving if re.search(rf"\b{re.escape(name)}\b", "".join(lines[header_end:])))
        if used:
            insert = f"from tests.helpers.{subject} import {', '.join(used)}\n"
            kept = "".join(lines[:header_end]) + insert + "".join(lines[header_end:])
        source.write_text(kept, encoding="utf-8")
        git("add", str(helper.relative_to(root)))
        renamed[module] = subject
    for module, subject in renamed.items():
        pattern = re.compile(rf"\bfrom {re.escape(module)} import\b")
        for path in sorted((root / "tests").rglob("*.py")):
            content = path.read_text(encoding="utf-8")
            changed = pattern.sub(f"from tests.helpers.{subject} import", content)
            if changed != content:
                path.write_text(changed, encoding="utf-8")


FILE_PARENTS = re.compile(r"(Path\(__file__\)(?:\.resolve\(\))?)((?:\.parent)+|\.parents\[(\d+)\])(?![\w\[])")


def deepen_file_paths(path: Path, levels: int) -> None:
    """`Path(__file__).parents[1]` in a file moved `levels` folders down → `.parents[1 + levels]`."""
    if levels <= 0 or path.suffix != ".py":
        return
    text = path.read_text(encoding="utf-8")

    def deeper(match: re.Match[str]) -> str:
        up = int(match.group(3)) + 1 if match.group(3) else match.group(2).count(".parent")
        return f"{match.group(1)}.parents[{up - 1 + levels}]"

    new = FILE_PARENTS.sub(deeper, text)
    if new != text:
        path.write_text(new, encoding="utf-8")


# --- the run ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--place", action="append", default=[], metavar="OLD=NEW",
                        help="place a file no table names: maps_autogen/x.py=model._x or tests/test_x.py=model")
    parser.add_argument("--dry-run", action="store_true", help="check the tables and the tree, change nothing")
    arguments = parser.parse_args(argv)
    root = Path.cwd()
    if not (root / PACKAGE).is_dir() or not (root / "tests").is_dir():
        fail("run from the repository root (maps_autogen/ and tests/ not found here)")
    table = dict(MODULES)
    for place in arguments.place:
        old, sep, new = place.partition("=")
        if not sep:
            fail(f"--place {place}: write OLD=NEW")
        if old.startswith("tests/"):
            TESTS[Path(old).stem] = new
        else:
            table[Path(old).with_suffix("").as_posix().removeprefix(f"{PACKAGE}/").replace("/", ".")] = new
    missing = unplaced(root, table)
    if missing:
        fail("no table places these files (add them to MODULES/TESTS in scripts/restructure.py, "
             "or pass --place OLD=NEW):\n  " + "\n  ".join(missing))
    if git("status", "--porcelain", "--untracked-files=no").strip():
        fail("the work tree has changes: commit or stash them first")
    if arguments.dry_run:
        print("every file is placed; nothing changed (--dry-run)")
        return 0

    dotted_map = renames(root, table)
    path_map = path_renames(root, table, dotted_map)
    new_to_old = {new: old for old, new in dotted_map.items()}
    files_before = repository_files(root)

    depth = move_package(root, table)
    depth.update(move_tests(root))
    for package in PACKAGES:
        (root / PACKAGE / package).mkdir(exist_ok=True)

    # the rewrite, over the files as they are now
    dotted = replacer(dotted_map, ".")
    paths = replacer(path_map, "/")
    files = repository_files(root)
    new_modules = {f"{PACKAGE}.{name}" if name else PACKAGE for name in old_modules(root)}
    exports: dict[str, dict[str, str]] = {package: dict(names) for package, names in EXTRA_EXPORTS.items()}
    notes: list[str] = []
    for file in files:
        text = file.read_text(encoding="utf-8", errors="surrogateescape")
        new = rewrite_text(text, dotted, paths)
        if file.suffix == ".py":
            new = rewrite_imports(file, root, new, new_modules, new_to_old, dotted_map, exports, notes)
        if new != text:
            file.write_text(new, encoding="utf-8", errors="surrogateescape")
    for path, levels in depth.items():
        deepen_file_paths(path, levels)

    for package in PACKAGES:
        init = root / PACKAGE / package / "__init__.py"
        init.write_text(package_init(package, exports.get(package, {})), encoding="utf-8")
    # the layer test's LAYERS name the packages now
    write_layers(root)
    for file, old, new in FIXUPS:
        path = root / file
        text = path.read_text(encoding="utf-8")
        if old not in text:
            fail(f"FIXUP not applicable: {file} has no {old!r} (update FIXUPS in scripts/restructure.py)")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")  # the first only
    share_test_helpers(root)
    ruff = root / ".venv" / "bin" / "ruff"
    if ruff.exists() or shutil.which("ruff"):
        command = str(ruff) if ruff.exists() else "ruff"
        # the imports this script wrote, sorted; the conftest split's unused imports dropped
        subprocess.run([command, "check", "--fix", "--select", "I", "--quiet", PACKAGE, "tests", "perf"], check=False)
        subprocess.run([command, "check", "--fix", "--select", "F401,I", "--quiet", "tests"], check=False)
    git("add", "-A", PACKAGE, "tests")
    for note in notes:
        print("note:", note)
    print(f"moved {len(files_before)} files' references; {sum(len(v) for v in exports.values())} names re-exported")
    return 0


LAYERS_TEXT = '''LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # helpers with no domain of their own: errors, text and secrets, limits, interrupts, the lifeline,
    # the run lock, the one atomic writer
    ("_util", ("_util", "_util.*")),
    # agents.yaml, config lists, the team, prompts, which model each step talks to, the defaults
    ("settings", ("settings", "settings.*")),
    # the schema of every file a run writes, the typed readers, the one writer
    ("records", ("records", "records.*")),
    # a problem and its images; what every benchmark's data side builds on
    ("problem", ("problem", "problem.*")),
    # the model client, service answers, cache, pools, tokens, the embedded model
    ("model", ("model", "model.*")),
    # AG2 and its adapter, the Manager's rules, the chat, a person in it, the transcript, one solve
    ("orchestration", ("orchestration", "orchestration.*")),
    # the tally, `maps score`, the benchmarks (each package's task and scorer side by side)
    ("scoring", ("scoring", "scoring.*")),
    # `maps eval` and `maps merge`: whole benchmarks solved, scored and logged
    ("eval", ("eval", "eval.*")),
    # reading runs: `maps report`, the paper's tables, the live view, `maps view`
    ("report", ("report", "report.*")),
    # the Python API, and the package that re-exports it lazily
    ("api", ("api", "api.*", "")),
    ("cli", ("cli", "cli.*")),
    # MAPS as Inspect tasks (`inspect eval maps_autogen/...`): loaded by Inspect only, never by maps
    ("inspect", ("inspect_tasks", "inspect_tasks.*")),
)
'''


DOCS_LAYERS = """1. `_util/`: errors, text, redact, limits, interrupts, lifeline, runlock, artifacts (the one atomic writer)
2. `settings/`: config, config lists, team, roles, prompts, endpoints, `defaults/`
3. `records/`: the schema of every file a run writes, the typed readers and the one writer, the run
   folder's paths (placed before the layers that make records, unlike the guide's list, which puts
   records after orchestration: records are typed where they are made, in `model/` and `orchestration/`)
4. `problem/`: a problem and its images; what benchmark tasks build on: the task protocol, rows, the hub
5. `model/`: the client, service answers, cache, pools, tokens, the embedded model (`local/`)
6. `orchestration/`: AG2 (`_ag2.py`) and its model-client adapter (`_ag2_client.py`), flow, verdict, role
   inputs, the chat and its agents, a person in the chat, the transcript writer, one solve
7. `scoring/`: the tally, `maps score`, the benchmarks (each one's `task.py` and `scorer.py`, their shared
   rules and registry)
8. `eval/`
9. `report/`: `maps report`, its figures, `paper/`, the terminal's live view, replies laid out, `view/`
10. `api/` (the Python API) and the package's `__init__` (which re-exports it lazily)
11. `cli/`
12. `inspect_tasks/`: MAPS as Inspect tasks, loaded by Inspect only
"""


def write_layers(root: Path) -> None:
    path = root / "tests" / "project" / "test_import_layers.py"
    text = path.read_text(encoding="utf-8")
    start = text.index("LAYERS: tuple")
    end = text.index("LAYER_ORDER =")
    path.write_text(text[:start] + LAYERS_TEXT + text[end:], encoding="utf-8")
    docs = root / "docs" / "development.md"
    text = docs.read_text(encoding="utf-8")
    new = re.sub(r"(?ms)^1\. foundation:.*?^\d+\. `cli/?`\n", lambda _: DOCS_LAYERS, text, count=1)
    if new == text:
        print("note: docs/development.md's numbered layer list not found: update it by hand")
    docs.write_text(new, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
