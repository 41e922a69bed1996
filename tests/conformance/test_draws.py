"""Drawing values (conformance.generation.draw): reproducible for a seed, the simplest value
first, no value drawn twice from the same choices, nothing when nothing can be drawn; the
engine's way gives the same kinds of values."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance import generation
from conformance.generation import draw


def test_the_same_seed_draws_the_same_values_and_another_seed_others():
    strategy = st.fixed_dictionaries({"a": st.integers(), "b": st.text()})
    assert draw(strategy, 10, 5) == draw(strategy, 10, 5)
    assert draw(strategy, 10, 5) != draw(strategy, 10, 6)


def test_the_simplest_value_comes_first_as_in_the_engine():
    strategy = st.fixed_dictionaries({"n": st.integers(min_value=3)}, optional={"s": st.text()})
    assert draw(strategy, 5, 1)[0] == {"n": 3}
    assert generation._draw_engine(strategy, 5, 1)[0] == {"n": 3}


def test_a_small_space_is_drawn_without_repeats():
    values = draw(st.sampled_from(["a", "b", "c"]), 10, 1)
    assert sorted(values) == ["a", "b", "c"]


def test_rejected_and_impossible_values_give_nothing():
    assert draw(st.integers().filter(lambda _: False), 3, 1) == []
    assert draw(st.integers(min_value=2, max_value=1), 3, 1) == []
    assert draw(st.integers(), 0, 1) == []


def test_a_seed_given_the_simplest_value_draws_what_it_would_have_drawn():
    strategy = st.fixed_dictionaries({"n": st.integers(min_value=3)}, optional={"s": st.text()})
    first = generation.Draws(strategy, 1)
    values = first.take(4)
    assert first.simplest is not None and first.simplest[1] == {"n": 3}
    given = generation.Draws(strategy, 2, first.simplest).take(6)
    assert given == generation.Draws(strategy, 2).take(6)
    assert given[0] is values[0]  # not drawn again
    assert given[1:4] != values[1:4]  # another seed's values after it
