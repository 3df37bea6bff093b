"""Plain pytest is the fast run: Docker, model, browser and slow tests run only when asked (tests/conftest.py).

Each case runs the suite's own conftest.py in a fresh pytester session over one file of trivial
tests that carry every combination of markers the suite uses, and reads which tests ran.
"""

from __future__ import annotations

import tomllib

import pytest

from tests.support.paths import ROOT

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_plain(): pass

@pytest.mark.slow
def test_slow(): pass

@pytest.mark.docker
def test_docker(): pass

@pytest.mark.docker
@pytest.mark.slow
def test_docker_slow(): pass

@pytest.mark.model
@pytest.mark.slow
def test_model_slow(): pass

@pytest.mark.browser
def test_browser(): pass

@pytest.mark.model
@pytest.mark.docker
def test_model_and_docker(): pass

@pytest.mark.docker
@pytest.mark.matrix
def test_docker_matrix_case(): pass
"""
EVERY = {
    "test_plain",
    "test_slow",
    "test_docker",
    "test_docker_slow",
    "test_model_slow",
    "test_browser",
    "test_model_and_docker",
    "test_docker_matrix_case",
}


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A folder with the suite's conftest.py, its markers (strict, as in pyproject.toml) and the marked tests."""
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    pytester.makeini("[pytest]\naddopts = --strict-markers\nmarkers =\n" + "".join(f"    {m}\n" for m in markers))
    pytester.makeconftest((ROOT / "tests" / "conftest.py").read_text())
    pytester.makepyfile(test_marked=TESTS)
    return pytester


QUIET = tuple(
    arg
    for name in ("cacheprovider", "textual-snapshot", "syrupy", "asyncio", "anyio", "hypothesispytest")
    for arg in ("-p", f"no:{name}")
)
"""Inner sessions write no cache and load no plugin the trivial tests do not need: the snapshot
plugin's one temporary folder belongs to the outer session, and a plugin's modules imported again in an
inner session are rewritten again (pytest rewrites every plugin's asserts), seconds each without a
bytecode cache."""


def ran(suite: pytest.Pytester, *options: str) -> set[str]:
    """The names of the tests that passed in a run with ``options``; every other one was deselected."""
    result = suite.inline_run(*QUIET, *options)
    passed, skipped, failed = result.listoutcomes()  # type: ignore[attr-defined]
    assert not skipped and not failed
    names = {report.nodeid.split("::")[-1] for report in passed}
    deselected = {item.name for call in result.getcalls("pytest_deselected") for item in call.items}
    assert names | deselected == EVERY and not names & deselected
    return names


def test_plain_pytest_runs_only_the_tests_that_need_nothing_and_are_not_slow(suite: pytest.Pytester) -> None:
    assert ran(suite) == {"test_plain"}


def test_each_option_runs_its_own_tests_slow_or_not(suite: pytest.Pytester) -> None:
    assert ran(suite, "--docker") == {"test_plain", "test_docker", "test_docker_slow"}
    assert ran(suite, "--model") == {"test_plain", "test_model_slow"}
    assert ran(suite, "--browser") == {"test_plain", "test_browser"}
    assert ran(suite, "--slow") == {"test_plain", "test_slow"}  # not the slow tests that need Docker or the model


def test_a_test_that_needs_two_resources_runs_only_when_both_are_asked(suite: pytest.Pytester) -> None:
    assert "test_model_and_docker" in ran(suite, "--docker", "--model")
    assert "test_model_and_docker" not in ran(suite, "--docker", "--slow")


def test_all_runs_everything_but_the_matrix_and_matrix_keeps_its_meaning(suite: pytest.Pytester) -> None:
    assert ran(suite, "--all") == EVERY - {"test_docker_matrix_case"}
    assert ran(suite, "--all", "--matrix") == EVERY
    docker = {"test_plain", "test_docker", "test_docker_slow"}
    assert ran(suite, "--docker", "--matrix") == docker | {"test_docker_matrix_case"}
    assert ran(suite, "--matrix") == {"test_plain"}  # a matrix case still needs its resource


def test_the_header_names_what_is_left_out_and_the_option_for_each(suite: pytest.Pytester) -> None:
    plain = suite.runpytest_inprocess(*QUIET, "--collect-only").stdout.str()
    assert "deselected unless asked: docker (--docker), model (--model), browser (--browser), slow (--slow)" in plain
    everything = suite.runpytest_inprocess(*QUIET, "--collect-only", "--all", "--matrix").stdout.str()
    assert "deselected unless asked: nothing" in everything


def test_make_test_and_ci_run_everything_and_make_unit_is_plain_pytest() -> None:
    recipes: dict[str, list[str]] = {}
    target = ""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line and not line.startswith(("\t", "#", " ")) and ":" in line and "=" not in line.split(":")[0]:
            target = line.split(":")[0]
        elif line.startswith("\t") and "-m pytest" in line:
            recipes.setdefault(target, []).append(line.split("-m pytest", 1)[1].strip())
    assert recipes == {"test": ["--all"], "unit": [""]}
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_tests_taken_back_keep_their_resource_groups(suite: pytest.Pytester) -> None:
    """With --all the grouping of tests/test_resource_groups.py holds: Docker wins over the model server."""
    out = suite.runpytest_inprocess(*QUIET, "-p", "tests.support.group_probe", "--collect-only", "-q", "--all")
    printed = [line.removeprefix("GROUP ") for line in out.stdout.lines if line.startswith("GROUP ")]
    groups = dict(line.split("::")[1].split(" ") for line in printed)
    assert groups == {
        "test_plain": "-",
        "test_slow": "-",
        "test_docker": "docker",
        "test_docker_slow": "docker",
        "test_model_slow": "model",
        "test_browser": "browser",
        "test_model_and_docker": "docker",
    }
