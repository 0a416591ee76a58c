"""Counts: two cumulative readings subtract into what happened between them, whatever the stack."""

from neurondev.runs.counts import Counts


def test_a_difference_keeps_only_the_ops_that_fell_back_in_between():
    earlier = Counts(executions=2, transfers_to_host=1, fallbacks=(("aten::histc", 1),), fallback_bytes=8)
    later = Counts(executions=3, transfers_to_host=1, fallbacks=(("aten::histc", 1), ("aten::addmm", 2)), fallback_bytes=40, syncs=1)
    delta = later - earlier
    assert (delta.executions, delta.transfers_to_host, delta.syncs) == (1, 0, 1)
    assert delta.fallbacks == (("aten::addmm", 2),) and delta.fallback_calls == 2 and delta.fallback_bytes == 32


def test_forced_means_the_device_handed_data_to_the_host():
    assert not Counts(transfers_to_device=3, compilations=1).forced
    assert Counts(executions=1).forced and Counts(transfers_to_host=1).forced and Counts(syncs=1).forced
