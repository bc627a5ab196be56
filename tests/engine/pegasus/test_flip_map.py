"""Appendix B: order of equal-skew tables (``utils::flip_map`` hinted multimap insert)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.pegasus.flip_map import flip_map_order


def test_flip_map001_doc_example_table_3_before_table_1():
    assert flip_map_order([(1, 2), (2, 1), (3, 2)]) == [(1, 2), (2, 3), (2, 1)]


def test_flip_map002_all_equal_is_ascending_app_id():
    assert flip_map_order([(i, 1) for i in range(1, 8)]) == [(1, i) for i in range(1, 8)]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 4), min_size=0, max_size=12))
def test_flip_map003_is_a_permutation_sorted_by_skew(skews):
    items = [(i + 1, s) for i, s in enumerate(skews)]
    out = flip_map_order(items)
    assert sorted(out) == sorted((s, a) for a, s in items)
    assert [s for s, _ in out] == sorted(skews)
