"""The paged KV cache: blocks are conserved, cached prefixes are shared and reused, eviction is LRU."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenplane.serving.engine.blocks import BlockManager, block_hashes

BS = 16


def manager(blocks: int = 8, *, prefix_caching: bool = True) -> BlockManager:
    return BlockManager(blocks, block_size=BS, prefix_caching=prefix_caching)


def test_a_block_s_hash_covers_every_token_before_it() -> None:
    a = block_hashes(list(range(48)), BS)
    b = block_hashes([99, *range(1, 48)], BS)
    assert len(a) == 3
    assert all(x != y for x, y in zip(a, b, strict=True))  # a change in block 0 changes every later block
    assert block_hashes(list(range(47)), BS) == a[:2]  # a partial block has no hash


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 80)), max_size=40))
def test_held_and_free_blocks_always_add_up_to_the_cache(ops: list[tuple[bool, int]]) -> None:
    kv = manager(16)
    tables: list[list[int]] = []
    for grow, tokens in ops:
        if grow or not tables:
            table: list[int] = []
            if kv.allocate(table, tokens):
                tables.append(table)
            else:
                assert table == []  # a failed allocation changes nothing
        else:
            kv.free(tables.pop(0))
        held = {b for t in tables for b in t}
        assert sum(len(t) for t in tables) == len(held)  # without hits, no block is in two tables
        assert len(held) + kv.free_blocks == 16
        assert kv.usage == len(held) / 16


def test_a_freed_prompt_s_blocks_stay_claimable_until_evicted() -> None:
    kv = manager(8)
    ids = list(range(64))
    hashes = block_hashes(ids, BS)
    first: list[int] = []
    assert kv.allocate(first, 64)
    kv.cache(first, hashes, 0, 4)
    kv.free(first)
    hits = kv.lookup(hashes, 64)
    assert len(hits) == 3  # the last token is always recomputed, so the fourth block is not a hit
    second: list[int] = []
    assert kv.allocate(second, 64, hits=hits)
    assert second[:3] == hits


def test_a_running_prompt_s_blocks_are_shared_not_copied() -> None:
    kv = manager(8)
    hashes = block_hashes(list(range(40)), BS)
    first: list[int] = []
    assert kv.allocate(first, 40)
    kv.cache(first, hashes, 0, 2)
    hits = kv.lookup(hashes, 40)
    second: list[int] = []
    assert kv.allocate(second, 40, hits=hits)
    assert second[:2] == first[:2]
    assert kv.free_blocks == 8 - 4  # three for the first, one more for the second's partial block
    kv.free(first)
    assert kv.free_blocks == 8 - 3  # the shared two are still held by the second


def test_the_least_recently_freed_cached_block_is_evicted_first() -> None:
    kv = manager(4)
    old, new = block_hashes([1] * 17, BS), block_hashes([2] * 17, BS)
    a: list[int] = []
    b: list[int] = []
    assert kv.allocate(a, 16)
    kv.cache(a, old, 0, 1)
    assert kv.allocate(b, 16)
    kv.cache(b, new, 0, 1)
    kept = list(b)
    kv.free(a)
    kv.free(b)
    filler: list[int] = []
    assert kv.allocate(filler, 3 * 16)  # the two empty blocks, then the oldest cached one
    assert kv.lookup(old, 17) == []
    assert kv.lookup(new, 17) == kept


def test_without_prefix_caching_nothing_is_ever_a_hit() -> None:
    kv = manager(8, prefix_caching=False)
    hashes = block_hashes(list(range(64)), BS)
    table: list[int] = []
    assert kv.allocate(table, 64)
    kv.cache(table, hashes, 0, 4)
    kv.free(table)
    assert kv.lookup(hashes, 64) == []
