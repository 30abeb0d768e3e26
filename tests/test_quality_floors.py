"""Quality floors: checking, tightening, lowering with a reason, and the git-history guard."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path

import pytest

from newsdedup.evaluation.floors import (
    TRAILER_KEY,
    FloorChange,
    Floors,
    check_floors,
    floor_lowered_trailer,
    format_check,
    load_floors,
    lower_floor,
    parse_floors,
    raise_floors,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
FLOORS_IN_REPO = "config/quality_floors.toml"

#: The metric paths `newsdedup eval` writes into results.json (the contract with the eval suite).
KNOWN_METRICS = {
    "extraction.cwced.f1",
    "extraction.cwced.precision",
    "extraction.cwced.recall",
    "extraction.cwced.date_accuracy",
    "extraction.leaks.leaking",
    "extraction.snippets.passed",
    "extraction.held_out.min_f1",
    "extraction.held_out.meeting_target",
    "extraction.held_out.empty",
    "text_level.default.f1",
    "text_level.default.precision",
    "text_level.default.recall",
    "text_level.default.negatives_fp_rate",
    "text_level.default.exact_detection",
    "page_level.default.f1",
    "page_level.default.precision",
    "page_level.default.recall",
    "page_level.leaks",
    "page_level.extraction.hot_list_leaks.pages",
    "page_level_distributed.default.f1",
    "page_level_distributed.default.precision",
    "page_level_distributed.default.recall",
    "page_level_distributed.leaks",
    "page_level_distributed.extraction.hot_list_leaks.pages",
    "page_level_distributed.crawl.stored_twice",
    "real_pairs.default.test.f1",
    "real_pairs.default.test.precision",
    "real_pairs.default.test.precision_without_reuse",
    "real_pairs.default.test.recall",
    "reuse.test.precision",
    "reuse.test.recall",
    "relations.test.near_f1",
    "relations.test.near_precision",
    "relations.test.reuse_linked_recall",
    "relations.test.different_linked_rate",
}

FLOORS_TEXT = """\
# Header comment that must survive rewrites.
# Second header line.

[minimum]
"demo.f1" = 0.9  # inline note
"demo.passed" = 20

[maximum]
"demo.leaks" = 5
"demo.fp_rate" = 0.02
"""

RESULTS = {"demo": {"f1": 0.9364, "passed": 25, "leaks": 3, "fp_rate": 0.004}}


@pytest.fixture
def floors_file(tmp_path: Path) -> Path:
    path = tmp_path / "floors.toml"
    path.write_text(FLOORS_TEXT, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- parsing and checking


def test_checked_in_floors_parse_and_name_only_known_metrics() -> None:
    floors = load_floors()  # the packaged default, i.e. config/quality_floors.toml
    assert len(floors) > 0
    assert {metric for metric, _, _ in floors.entries()} <= KNOWN_METRICS
    assert floors.maximum["extraction.leaks.leaking"] == 0
    text = (REPO_ROOT / FLOORS_IN_REPO).read_text(encoding="utf-8")
    assert text.startswith("#") and "Floor-lowered:" in text  # the header says how to raise and lower


def test_all_floors_pass_on_good_results(floors_file: Path) -> None:
    checks = check_floors(RESULTS, load_floors(floors_file))
    assert [(c.metric, c.kind, c.passed) for c in checks] == [
        ("demo.f1", "min", True),
        ("demo.passed", "min", True),
        ("demo.leaks", "max", True),
        ("demo.fp_rate", "max", True),
    ]
    assert format_check(checks).splitlines()[-1] == "4 floors: 4 passed, 0 failed"


def test_figures_past_their_floor_fail(floors_file: Path) -> None:
    bad = {"demo": {"f1": 0.89, "passed": 20, "leaks": 6, "fp_rate": 0.02}}
    verdicts = {c.metric: c.verdict for c in check_floors(bad, load_floors(floors_file))}
    assert verdicts == {
        "demo.f1": "FAIL: below minimum",
        "demo.passed": "ok",  # equal to the floor passes
        "demo.leaks": "FAIL: above maximum",
        "demo.fp_rate": "ok",
    }


def test_missing_metric_fails_as_not_measured(floors_file: Path) -> None:
    results = {"demo": {"f1": 0.95, "passed": 25, "leaks": 0, "fp_rate": None}}  # no number is no measurement
    checks = {c.metric: c for c in check_floors(results, load_floors(floors_file))}
    assert checks["demo.fp_rate"].measured is None and not checks["demo.fp_rate"].passed
    table = format_check(list(checks.values()))
    assert "not measured" in table and table.splitlines()[-1] == "4 floors: 3 passed, 1 failed"


def test_nan_fails() -> None:
    floors = Floors(minimum={"a": 0.5}, maximum={"b": 1})
    assert not any(c.passed for c in check_floors({"a": float("nan"), "b": float("nan")}, floors))


@pytest.mark.parametrize(
    ("text", "fix"),
    [
        ('[minimum]\n"a" = "high"\n', "finite number"),
        ("[minimum]\na.f1 = 0.9\n", "quote the dotted metric path"),
        ('[floors]\n"a" = 1\n', "[minimum] or [maximum]"),
        ('[minimum]\n"a" = 0.9\n[maximum]\n"a" = 0.5\n', "no figure could pass"),
        ("[minimum\n", "not valid TOML"),
    ],
)
def test_bad_floors_files_are_refused_with_the_fix(text: str, fix: str) -> None:
    with pytest.raises(ValueError, match=fix.replace("[", r"\[").replace("]", r"\]")):
        parse_floors(text)


def test_missing_floors_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_floors(tmp_path / "nope.toml")


# ----------------------------------------------------------------------------- raising


def test_raise_tightens_to_measured_less_headroom_and_keeps_comments(floors_file: Path) -> None:
    changes = raise_floors(RESULTS, floors_file, headroom=0.005)
    assert {(c.metric, c.old, c.new) for c in changes} == {
        ("demo.f1", 0.9, 0.931),  # 0.9364 - 0.005 = 0.9314, rounded down
        ("demo.passed", 20, 24),  # counts stay whole: floor(25 - 0.005)
        ("demo.leaks", 5, 4),  # ceil(3 + 0.005)
        ("demo.fp_rate", 0.02, 0.009),  # 0.004 + 0.005
    }
    text = floors_file.read_text(encoding="utf-8")
    assert text.startswith("# Header comment that must survive rewrites.\n# Second header line.\n")
    assert '"demo.f1" = 0.931  # inline note' in text and '"demo.passed" = 24\n' in text
    floors = load_floors(floors_file)
    assert floors.minimum == {"demo.f1": 0.931, "demo.passed": 24}
    assert all(c.passed for c in check_floors(RESULTS, floors))


def test_raise_never_loosens_nor_passes_the_measured_value(floors_file: Path) -> None:
    worse = {"demo": {"f1": 0.85, "passed": 10, "leaks": 9, "fp_rate": 0.5}}
    assert raise_floors(worse, floors_file, headroom=0.0) == []
    assert floors_file.read_text(encoding="utf-8") == FLOORS_TEXT
    # Zero headroom on a figure with more decimals: the floor rounds down, never above the figure.
    changes = raise_floors({"demo": {"f1": 0.93659}}, floors_file, headroom=0.0)
    assert [(c.metric, c.new) for c in changes] == [("demo.f1", 0.936)]
    # Binary float subtraction (0.936 - 0.006 = 0.92999...) must not cost a thousandth.
    assert raise_floors({"demo": {"f1": 0.936}}, floors_file, headroom=0.006) == []
    assert load_floors(floors_file).minimum["demo.f1"] == 0.936


@pytest.mark.parametrize("headroom", [-0.01, float("nan"), "0.01"])
def test_raise_refuses_bad_headroom(floors_file: Path, headroom: object) -> None:
    with pytest.raises(ValueError, match="headroom"):
        raise_floors(RESULTS, floors_file, headroom=headroom)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- lowering


def test_lower_needs_a_reason(floors_file: Path) -> None:
    for reason in ("", "   ", "two\nlines"):
        with pytest.raises(ValueError, match="reason"):
            lower_floor(floors_file, "demo.f1", 0.85, reason=reason)
    assert floors_file.read_text(encoding="utf-8") == FLOORS_TEXT


def test_lower_loosens_one_floor_and_prints_the_trailer(floors_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change = lower_floor(floors_file, "demo.leaks", 8, reason="new portal layout leaks captions")
    assert change == FloorChange("demo.leaks", "max", 5, 8, reason="new portal layout leaks captions")
    trailer = "Floor-lowered: demo.leaks 5 -> 8: new portal layout leaks captions"
    assert change.trailer == trailer and trailer in capsys.readouterr().out.splitlines()
    floors = load_floors(floors_file)
    assert floors.maximum["demo.leaks"] == 8 and floors.minimum["demo.f1"] == 0.9


def test_lower_refuses_tightening_and_unknown_metrics(floors_file: Path) -> None:
    with pytest.raises(ValueError, match="does not lower"):
        lower_floor(floors_file, "demo.f1", 0.95, reason="typo")
    with pytest.raises(ValueError, match="no floor for 'demo.recall'"):
        lower_floor(floors_file, "demo.recall", 0.5, reason="typo")
    assert floors_file.read_text(encoding="utf-8") == FLOORS_TEXT


def test_eval_command_line_lowers_a_floor_with_its_reason(floors_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from newsdedup.cli import main

    assert main(["eval", "--floors", str(floors_file), "--lower-floor", "demo.f1=0.75"]) == 2  # no reason
    assert main(["eval", "--floors", str(floors_file), "--lower-floor", "demo.f1=0.75",
                 "--reason", "harder test pages"]) == 0
    assert "Floor-lowered: demo.f1 0.9 -> 0.75: harder test pages" in capsys.readouterr().out
    assert load_floors(floors_file).minimum["demo.f1"] == 0.75


# ----------------------------------------------------------------------------- git history


class HistoryUnavailable(RuntimeError):
    """git is missing, or the folder is not inside a git work tree."""


class HistoryIncomplete(RuntimeError):
    """A shallow clone whose missing history could not be fetched: its oldest commits show no parents, so what
    they changed in the floors could not be checked. Never a reason to skip."""


def _is_shallow(repo: Path) -> bool:
    return _git_output(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"


def _whole_history(repo: Path, scratch: Path) -> Path:
    """Where to read ``repo``'s whole history: ``repo`` itself, or for a shallow clone a copy of it in ``scratch`` that
    fetched what the clone lacks from its remote (``git fetch --unshallow``; a clone of a local folder needs no
    network). The checkout under test is never changed. Raises HistoryIncomplete when the history cannot be had: in a
    shallow clone the oldest commit looks like the first one."""
    if not _is_shallow(repo):
        return repo
    remote = _git_output(repo, "remote", "get-url", "origin").stdout.strip()
    if remote and "://" not in remote and not remote.startswith("/") and ":" not in remote:
        remote = str((Path(repo) / remote).resolve())  # a relative path, as git reads it: from the checkout
    copy = scratch / "history"
    cloned = subprocess.run(["git", "clone", "--quiet", "--no-local", "--no-checkout", str(repo), str(copy)],
                            capture_output=True, text=True, check=False)
    if not remote or cloned.returncode != 0:
        detail = cloned.stderr.strip() if cloned.returncode != 0 else "it has no remote origin"
    else:
        fetched = _git_output(copy, "fetch", "--quiet", "--unshallow", remote)
        if fetched.returncode == 0 and not _is_shallow(copy):
            return copy
        detail = f"git fetch --unshallow: {fetched.stderr.strip() or 'still shallow'}"
    raise HistoryIncomplete(f"{repo} is a shallow clone and its history could not be fetched ({detail}); clone "
                            "without --depth, or from a remote it can reach")


def _git_output(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, encoding="utf-8",
                          errors="replace", check=False)


def _floors_at(repo: Path, commit: str, path: str) -> Floors | None:
    shown = _git_output(repo, "show", f"{commit}:./{path}")  # ./: relative to -C, as the log's pathspec
    return parse_floors(shown.stdout, f"{commit[:10]}:{path}") if shown.returncode == 0 else None


def _shown(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def loosened_without_reason(repo: Path, path: str) -> list[str]:
    """Every loosening of ``path`` in ``repo``'s git history whose commit message lacks a ``Floor-lowered: <metric>
    ...`` line for it; a merge counts only floors looser than in every parent. A floor is loosened when it is lowered,
    removed (a renamed floor is the old name removed), or redefined: moved between minimum and maximum (the old one
    removed) or changed between a count and a fraction (whole number <-> decimal), which no comparison of the two
    values can judge. A shallow clone's history is fetched first, into a throwaway copy (HistoryIncomplete when it
    cannot be)."""
    if shutil.which("git") is None:
        raise HistoryUnavailable("git is not installed")
    inside = _git_output(repo, "rev-parse", "--is-inside-work-tree") if Path(repo).is_dir() else None
    if inside is None or inside.stdout.strip() != "true":
        raise HistoryUnavailable(f"{repo} is not a git checkout")
    with tempfile.TemporaryDirectory(prefix="floors-history-") as scratch:
        return _loosened(_whole_history(repo, Path(scratch)), path)


def _loosened(repo: Path, path: str) -> list[str]:
    log = _git_output(repo, "log", "--full-history", "--format=%H%x1f%P%x1f%B%x1e", "--", path)
    if log.returncode != 0:
        if "does not have any commits" in log.stderr:
            return []
        raise HistoryUnavailable(f"git log failed in {repo}: {log.stderr.strip()}")
    problems = []
    for record in filter(str.strip, log.stdout.split("\x1e")):
        commit, parents, message = record.lstrip("\n").split("\x1f", 2)
        where = f"{commit[:10]} ({(message.strip().splitlines() or [''])[0]})"
        try:
            after = _floors_at(repo, commit, path)
        except ValueError as error:
            problems.append(f"{where}: committed a floors file that does not parse: {error}")
            continue
        flagged: dict[tuple[str, str], str] | None = None
        for parent in parents.split():
            try:
                before = _floors_at(repo, parent, path) or Floors()
            except ValueError:
                before = Floors()  # reported at the commit that broke it
            loosened = {}
            for metric, kind, old in before.entries():
                new = after.table(kind).get(metric) if after else None
                if new is None:
                    loosened[metric, kind] = f"removed the {kind} floor {metric} (was {_shown(old)})"
                elif isinstance(new, int) != isinstance(old, int):
                    loosened[metric, kind] = (f"redefined the {kind} floor {metric} {_shown(old)} -> {_shown(new)} "
                                              "(a count became a fraction or the other way round)")
                elif (new < old) if kind == "min" else (new > old):
                    loosened[metric, kind] = f"loosened the {kind} floor {metric} {_shown(old)} -> {_shown(new)}"
            flagged = loosened if flagged is None else {k: v for k, v in flagged.items() if k in loosened}
        explained = set(re.findall(rf"^\s*{TRAILER_KEY}:\s*(\S+)", message, flags=re.MULTILINE))
        problems += [f"{where}: {text} without a '{TRAILER_KEY}: {metric} ...' line in its message"
                     for (metric, _), text in (flagged or {}).items() if metric not in explained]
    return problems


def test_checked_in_floors_were_never_loosened_without_a_reason() -> None:
    try:
        problems = loosened_without_reason(REPO_ROOT, FLOORS_IN_REPO)
    except HistoryUnavailable as error:  # not a checkout at all (an unpacked sdist): there is no history to read
        pytest.skip(f"cannot read the git history: {error}")
    except HistoryIncomplete as error:
        pytest.fail(str(error))
    assert problems == [], "floors loosened without a 'Floor-lowered:' trailer:\n" + "\n".join(problems)


def _git(repo: Path, *args: str) -> None:
    # A private identity and no user/system config, so the throwaway repository behaves the same everywhere.
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Floors Test",
        "GIT_AUTHOR_EMAIL": "floors@example.invalid",
        "GIT_COMMITTER_NAME": "Floors Test",
        "GIT_COMMITTER_EMAIL": "floors@example.invalid",
    }
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _commit(repo: Path, text: str, message: str) -> None:
    path = repo / FLOORS_IN_REPO
    path.parent.mkdir(exist_ok=True)
    path.write_text(text, encoding="utf-8")
    _git(repo, "add", FLOORS_IN_REPO)
    _git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)


@pytest.fixture
def history_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    return repo


def test_history_flags_a_loosening_without_the_trailer(history_repo: Path) -> None:
    assert loosened_without_reason(history_repo, FLOORS_IN_REPO) == []  # no commit yet
    _commit(history_repo, FLOORS_TEXT, "Add floors")
    _commit(history_repo, FLOORS_TEXT.replace("0.9  #", "0.95  #"), "Raise f1 floor")  # tightening is free
    assert loosened_without_reason(history_repo, FLOORS_IN_REPO) == []
    _commit(history_repo, FLOORS_TEXT.replace('"demo.leaks" = 5', '"demo.leaks" = 7'), "Relax things")
    problems = loosened_without_reason(history_repo, FLOORS_IN_REPO)
    assert len(problems) == 2  # demo.f1 went 0.95 -> 0.9 and demo.leaks 5 -> 7
    assert any("demo.f1 0.95 -> 0.9" in p for p in problems) and any("demo.leaks 5 -> 7" in p for p in problems)
    assert all("Relax things" in p for p in problems)


def test_history_accepts_a_loosening_with_the_trailer_and_flags_a_removal(history_repo: Path) -> None:
    _commit(history_repo, FLOORS_TEXT, "Add floors")
    lowered = FLOORS_TEXT.replace('"demo.leaks" = 5', '"demo.leaks" = 7')
    trailer = floor_lowered_trailer("demo.leaks", 5, 7, "captions count as leaks now")
    _commit(history_repo, lowered, f"Relax leaks\n\nBody text.\n\n{trailer}\n")
    assert loosened_without_reason(history_repo, FLOORS_IN_REPO) == []
    # A trailer for another metric does not cover a removed floor.
    _commit(history_repo, lowered.replace('"demo.passed" = 20\n', ""), f"Drop passed floor\n\n{trailer}\n")
    (problem,) = loosened_without_reason(history_repo, FLOORS_IN_REPO)
    assert "removed the min floor demo.passed" in problem and "Drop passed floor" in problem


def test_history_outside_a_git_checkout_is_unavailable(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    with pytest.raises(HistoryUnavailable):
        loosened_without_reason(tmp_path, FLOORS_IN_REPO)


def test_checked_in_file_is_plain_toml() -> None:
    # The floors file must stay readable by any TOML reader (CI tooling, editors), not just ours.
    document = tomllib.loads((REPO_ROOT / FLOORS_IN_REPO).read_text(encoding="utf-8"))
    assert set(document) == {"minimum", "maximum"}


def test_history_flags_a_renamed_or_redefined_floor_unless_the_commit_names_it(history_repo: Path) -> None:
    _commit(history_repo, FLOORS_TEXT, "Add floors")
    renamed = FLOORS_TEXT.replace('"demo.passed" = 20', '"demo.snippets_passed" = 20')
    _commit(history_repo, renamed, "Rename passed")
    (problem,) = loosened_without_reason(history_repo, FLOORS_IN_REPO)
    assert "removed the min floor demo.passed" in problem and "Rename passed" in problem
    # A count made a fraction: 5 leaks at most became 0.05 (a share?), tighter by value, another measure.
    share = renamed.replace('"demo.leaks" = 5', '"demo.leaks" = 0.05')
    _commit(history_repo, share, "Leaks as a share")
    problems = loosened_without_reason(history_repo, FLOORS_IN_REPO)
    assert len(problems) == 2 and "redefined the max floor demo.leaks 5 -> 0.05" in problems[0]
    # Moved from the minimum table to the maximum table: the minimum is gone, flagged unless the commit says why.
    moved = share.replace('"demo.f1" = 0.9  # inline note\n', "").replace("[maximum]\n", '[maximum]\n"demo.f1" = 0.9\n')
    _commit(history_repo, moved, "Move f1")
    problems = loosened_without_reason(history_repo, FLOORS_IN_REPO)
    assert len(problems) == 3 and "removed the min floor demo.f1" in problems[0] and "Move f1" in problems[0]
    why = floor_lowered_trailer("demo.f1", 0.9, 0.9, "f1 is an error rate now")
    _commit(history_repo, share, f"Back\n\n{why}\n")
    _commit(history_repo, moved, f"Move f1\n\n{why}\n")
    assert len(loosened_without_reason(history_repo, FLOORS_IN_REPO)) == 3  # both explained: nothing new


def _clone(source: Path, target: Path, *args: str) -> Path:
    subprocess.run(["git", "clone", "-q", *args, f"file://{source}", str(target)], check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"})
    return target


def test_a_shallow_clone_fetches_its_history_and_checks_all_of_it(history_repo: Path, tmp_path: Path) -> None:
    _commit(history_repo, FLOORS_TEXT, "Add floors")
    _commit(history_repo, FLOORS_TEXT.replace('"demo.leaks" = 5', '"demo.leaks" = 7'), "Relax leaks")
    for n in range(2):
        _commit(history_repo, FLOORS_TEXT.replace('"demo.leaks" = 5', '"demo.leaks" = 7') + f"# edit {n}\n", f"Edit {n}")
    shallow = _clone(history_repo, tmp_path / "shallow", "--depth", "1")
    assert _is_shallow(shallow)  # what a CI's shallow checkout looks like: the one commit has no parent
    state = _git_state(shallow)
    (problem,) = loosened_without_reason(shallow, FLOORS_IN_REPO)
    assert "demo.leaks 5 -> 7" in problem and "Relax leaks" in problem
    assert _is_shallow(shallow) and _git_state(shallow) == state  # read in a copy: the checkout is as it was


def _git_state(repo: Path) -> dict[str, str]:
    """What reading the history must leave as it was in a checkout: its shallow boundary, config, refs and objects."""
    git_dir = Path(_git_output(repo, "rev-parse", "--absolute-git-dir").stdout.strip())
    files = ("shallow", "config", "FETCH_HEAD")
    state = {name: (git_dir / name).read_text() for name in files if (git_dir / name).exists()}
    state["refs"] = _git_output(repo, "for-each-ref").stdout
    state["objects"] = _git_output(repo, "count-objects", "-v").stdout
    return state


def test_the_check_of_this_checkout_leaves_its_git_state_as_it_was() -> None:
    if shutil.which("git") is None or _git_output(REPO_ROOT, "rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    # Its shallow boundary and config only: other worktrees of a shared repository may commit meanwhile.
    before = {k: v for k, v in _git_state(REPO_ROOT).items() if k in ("shallow", "config")}
    try:
        loosened_without_reason(REPO_ROOT, FLOORS_IN_REPO)
    except (HistoryUnavailable, HistoryIncomplete):
        pass
    assert {k: v for k, v in _git_state(REPO_ROOT).items() if k in ("shallow", "config")} == before


def test_a_shallow_clone_that_cannot_fetch_its_history_fails_loudly(history_repo: Path, tmp_path: Path) -> None:
    _commit(history_repo, FLOORS_TEXT, "Add floors")
    _commit(history_repo, FLOORS_TEXT + "# edit\n", "Edit")
    shallow = _clone(history_repo, tmp_path / "shallow", "--depth", "1")
    shutil.rmtree(history_repo)  # the remote is gone (a CI copy of a shallow clone, offline)
    with pytest.raises(HistoryIncomplete, match="shallow clone"):
        loosened_without_reason(shallow, FLOORS_IN_REPO)
