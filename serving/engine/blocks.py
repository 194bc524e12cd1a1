"""The paged KV cache: fixed-size blocks, reference counts and a prefix cache, as vLLM V1 keeps them.

A sequence holds a table of block ids, enough for the tokens it has computed.
A *full* prompt block is identified by a hash chain, ``hash((parent_hash,
token ids of the block))``, so a block's identity covers every token before it:
two prompts share a cached block only when they agree up to its end.

Freed blocks go to a free queue in least-recently-used order. A freed block
that holds cached content keeps its hash and can be claimed back by a later
prompt with the same prefix until it is popped to hold something else, as
vLLM's ``FreeKVCacheBlockQueue`` does. There are only ``num_blocks`` blocks,
so the cache is bounded by the KV memory itself.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

NO_PARENT = 0  # the hash chain's seed: the first block of every prompt hangs off it


def block_hashes(ids: Sequence[int], block_size: int) -> list[int]:
    """The hash chain of the full blocks of ``ids`` (a trailing partial block has none)."""
    hashes: list[int] = []
    parent = NO_PARENT
    for start in range(0, len(ids) - block_size + 1, block_size):
        # hash() of a tuple of ints is not salted, so the chain is the same in every process.
        parent = hash((parent, tuple(ids[start : start + block_size])))
        hashes.append(parent)
    return hashes


class BlockManager:
    """Allocates KV blocks to sequences and reuses cached prompt blocks.

    Counters ``queries`` and ``hits`` are in tokens, as vLLM's
    ``prefix_cache_queries`` and ``prefix_cache_hits`` are.
    """

    def __init__(self, num_blocks: int, *, block_size: int, prefix_caching: bool) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.prefix_caching = prefix_caching
        self._refs = [0] * num_blocks
        self._hash: list[int | None] = [None] * num_blocks
        self._cached: dict[int, int] = {}  # block hash -> the block holding that content
        # Free blocks, the next to be reused first. Cached content in here is still claimable.
        self._free: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self.queries = 0
        self.hits = 0

    @property
    def free_blocks(self) -> int:
        """Blocks not held by any sequence, cached content included (it is evictable)."""
        return len(self._free)

    @property
    def usage(self) -> float:
        """Share of blocks held by sequences, 0..1: vLLM's ``kv_cache_usage_perc``."""
        if not self.num_blocks:
            return 0.0
        return 1.0 - len(self._free) / self.num_blocks

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def lookup(self, hashes: Sequence[int], prompt_tokens: int) -> list[int]:
        """Blocks of the longest cached prefix of a prompt; claims and counts nothing.

        At least the prompt's last token is always recomputed: its logits give the
        first output token, so a fully cached prompt still gives up one block.
        """
        if not self.prefix_caching:
            return []
        limit = (prompt_tokens - 1) // self.block_size
        found: list[int] = []
        for block_hash in hashes[:limit]:
            block = self._cached.get(block_hash)
            if block is None:
                break
            found.append(block)
        return found

    def count_query(self, prompt_tokens: int, hit_tokens: int) -> None:
        """Count one admitted prompt; a prompt that waits for blocks is looked up again but counted once."""
        self.queries += prompt_tokens
        self.hits += hit_tokens

    def allocate(self, table: list[int], tokens: int, *, hits: Sequence[int] = ()) -> bool:
        """Grow ``table`` to hold ``tokens`` tokens, claiming the cached ``hits`` first.

        Returns False, changing nothing, when too few blocks are free.
        """
        new = self.blocks_for(tokens) - len(table) - len(hits)
        refs = self._refs
        claimed_free = sum(1 for b in hits if refs[b] == 0)
        if max(new, 0) + claimed_free > len(self._free):
            return False
        for block in hits:
            if refs[block] == 0:
                del self._free[block]
            refs[block] += 1
            table.append(block)
        for _ in range(new):
            block, _ = self._free.popitem(last=False)
            old = self._hash[block]
            if old is not None:  # evict the content it held
                self._hash[block] = None
                if self._cached.get(old) == block:
                    del self._cached[old]
            refs[block] = 1
            table.append(block)
        return True

    def cache(self, table: Sequence[int], hashes: Sequence[int], start: int, stop: int) -> None:
        """Record blocks ``start..stop`` of ``table`` as holding the prompt content ``hashes`` names."""
        if not self.prefix_caching:
            return
        for i in range(start, min(stop, len(hashes), len(table))):
            block, block_hash = table[i], hashes[i]
            if self._hash[block] is None and block_hash not in self._cached:
                self._hash[block] = block_hash
                self._cached[block_hash] = block

    def free(self, table: list[int]) -> None:
        """Release a sequence's blocks and empty its table.

        The last blocks go first into the queue, so a prompt's early blocks, the
        ones other prompts are likeliest to share, are evicted last. Blocks with
        no cached content go to the front: they are the cheapest to reuse.
        """
        refs, free, hashes = self._refs, self._free, self._hash
        for block in reversed(table):
            refs[block] -= 1
            if refs[block] == 0:
                free[block] = None
                if hashes[block] is None:
                    free.move_to_end(block, last=False)
        table.clear()
