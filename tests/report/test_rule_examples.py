"""Each rule's minimal example (docs/rules/examples/CODE.py), run as a user runs it, yields that rule and its page
shows what neurondev said; the code to use instead (CODE_instead.py) yields nothing of it. The tests read the folder;
one rule per test, so that the workers share them."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path

import pytest

from neurondev import rule_runs, rulebook

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("make_rule_cards", ROOT / "scripts" / "make_rule_cards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()

IN_THE_FOLDER = sorted(path.stem for path in rule_runs.EXAMPLES.glob("*.py") if not path.stem.endswith("_instead"))
RUN_HERE = [code for code in IN_THE_FOLDER if not rule_runs.example(code).needs]


@pytest.mark.xla
@pytest.mark.parametrize("code", RUN_HERE)
def test_the_rules_example_yields_it_its_card_is_what_neurondev_says_today_and_the_code_instead_yields_nothing(code):
    example = rule_runs.example(code)
    status, said = rule_runs.run(example.path, example.command)
    assert rule_runs.reports(said, code), f"{code}'s example (exit {status}) did not report {code}:\n{said}"
    assert status == (1 if example.command else 0), said  # a torchrun job that diverges exits 1
    card = (SCRIPT.CARDS / f"{code}.txt").read_text()
    assert rule_runs.comparable(said) == rule_runs.comparable(card), f"the card is out of date: run scripts/make_rule_cards.py {code}"
    status, said = rule_runs.run(example.instead, example.command)
    assert status == 0 and not rule_runs.reports(said, code), f"the code to use instead of {code}'s example:\n{said}"


def test_every_rule_has_an_example_and_one_to_use_instead_and_every_card_is_one_of_them():
    assert [rule.code for rule in rulebook.RULES] == IN_THE_FOLDER
    files = {path.name for path in rule_runs.EXAMPLES.iterdir()}
    assert files == {f"{code}{end}.py" for code in IN_THE_FOLDER for end in ("", "_instead")}  # nothing else, no stray file
    assert [rule.code for rule in rulebook.RULES if rule_runs.example(rule.code).needs] == ["ND206"]  # TorchNeuron's: shown, not run
    assert rule_runs.codes() == RUN_HERE and {card.stem for card in SCRIPT.CARDS.glob("*.txt")} == set(RUN_HERE)


def test_a_torchrun_example_says_its_command_and_a_missing_file_is_named():
    assert rule_runs.example("ND412").command == "torchrun --nproc-per-node 2 -m neurondev watch docs/rules/examples/ND412.py"
    assert rule_runs.example("ND101").command == "" and rule_runs.example("ND206").needs == "torch-neuronx and a Trainium instance"
    with pytest.raises(FileNotFoundError, match="ND999 has no example ND999.py"):
        rule_runs.example("ND999")


def test_a_rule_is_told_reported_only_by_its_own_code():
    assert rule_runs.reports("x [ND101]\n", "ND101") and rule_runs.reports("The ranks diverge [ND412, ../rules/ND412.html]:", "ND412")
    assert rule_runs.reports("[('ND401', 'example.py:4')]", "ND401")
    assert not rule_runs.reports("x [ND1010]", "ND101") and not rule_runs.reports("see ND101's page", "ND101")


_GLOO_LINE = "[Gloo] Rank {} is connected to 1 peer ranks. Expected number of connected peer ranks is : "
_CARD = "Watched 2 of 2 rank(s) of a torchrun job:\n"


@pytest.mark.parametrize(
    "printed",
    [
        _GLOO_LINE.format(0) + "1\n" + _GLOO_LINE.format(1) + "1\n" + _CARD,  # one line after the other
        _GLOO_LINE.format(0) + _GLOO_LINE.format(1) + "1\n1\n" + _CARD,  # rank 1's line between rank 0's colon and number
        _GLOO_LINE.format(0) + "1" + _GLOO_LINE.format(1) + "\n1\n" + _CARD,  # ND412's clean-clone run: before a newline
        "W1206 19:30:00.000 torch/distributed/run.py] Setting OMP_NUM_THREADS\n" + _CARD,  # torchrun's warning
    ],
)
def test_a_jobs_output_keeps_neurondevs_words_and_none_of_gloos_however_the_ranks_interleave_them(printed):
    assert rule_runs._quiet(printed) == _CARD


def _pieces(rank: int) -> list[str]:
    """gloo's connection line as its writes print it, one piece per write."""
    expected = "Expected number of connected peer ranks is : "
    return ["[Gloo] Rank ", str(rank), " is connected to ", "1", " peer ranks. ", expected, "1", "\n"]


def _interleavings(first: list[str], second: list[str]):
    """Every order of two ranks' writes that keeps each rank's own order."""
    for places in itertools.combinations(range(len(first) + len(second)), len(first)):
        mine, theirs = iter(first), iter(second)
        yield "".join(next(mine) if i in places else next(theirs) for i in range(len(first) + len(second)))


def test_every_interleaving_of_two_ranks_gloo_writes_leaves_the_job_its_own_words():
    orders = list(_interleavings(_pieces(0), _pieces(1)))
    last_clean_clone = "".join(_pieces(0)[:5] + _pieces(1) + _pieces(0)[5:])  # "Expected number ... is : 1" on a line alone
    assert len(orders) == 12870 and last_clean_clone in orders
    wrong = [order for order in orders if rule_runs._quiet(order + _CARD) != _CARD]
    assert wrong == []


def test_a_number_line_of_the_jobs_own_after_its_first_line_is_kept():
    assert rule_runs._quiet(_GLOO_LINE.format(0) + "1\n" + _CARD + "4\n\n") == _CARD + "4\n\n"
