"""Stand-ins for the SGLang objects a HiCache storage backend sees (SGLang's code is not
available to the suite): HiCacheStorageConfig, PoolName / PoolHitPolicy / PoolTransfer,
and host pools with SGLang's page-first layouts, built on torch tensors as SGLang's are
(reference/integration.md §0.1-§0.3, §1.7):

* MHA KV: ``layer_first`` ``(2, L, size, H, D)`` (SGLang's default host layout; KV-only
  models: the Mamba pool needs a page-first one), ``page_first`` ``(2, size, L, H, D)``,
  ``page_first_direct`` ``(2, pages, L, page, H, D)``; ``get_page_buffer_meta`` gives a K
  and a V pointer per page for the page-first layouts, a (K, V) pair per layer per page for
  ``layer_first``; ``get_data_page(flat=True)`` all K then all V in every layout.
* Mamba: ``temporal (size, L, 1, *shape)`` plus one ``conv[i] (size, L, 1, *shape)`` per
  conv state, page size 1; ``get_page_buffer_meta`` gives temporal then each conv per slot.
* HostPoolGroup: entries [kv (anchor), mamba]; layout, page size and the page calls proxy
  to the anchor.
"""

import dataclasses
import enum
from typing import Any, List, Optional

import torch


def itemsize(dtype) -> int:
    """Bytes per element (torch.dtype.itemsize is newer than Debian's torch 1.13)."""
    return torch.empty(0, dtype=dtype).element_size()


@dataclasses.dataclass
class HiCacheStorageConfig:
    """The fields of SGLang's HiCacheStorageConfig at d72314808."""

    tp_rank: int = 0
    tp_size: int = 1
    pp_rank: int = 0
    pp_size: int = 1
    attn_cp_rank: int = 0
    attn_cp_size: int = 1
    is_mla_model: bool = False
    enable_storage_metrics: bool = False
    is_page_first_layout: bool = True
    model_name: Optional[str] = "qwen3-next-toy"
    tp_lcm_size: Optional[int] = None
    should_split_heads: bool = False
    extra_config: Optional[dict] = None


class PoolName(str, enum.Enum):
    KV = "kv"
    MAMBA = "mamba"
    SWA = "swa"


class PoolHitPolicy(str, enum.Enum):
    ALL_PAGES = "all_pages"
    TRAILING_PAGES = "trailing_pages"


@dataclasses.dataclass
class PoolTransfer:
    name: PoolName
    host_indices: Optional[torch.Tensor] = None
    device_indices: Optional[torch.Tensor] = None
    keys: Optional[List[str]] = None
    hit_policy: PoolHitPolicy = PoolHitPolicy.ALL_PAGES
    nodes_to_load: Optional[List[Any]] = None
    indices_from_pool: Optional[PoolName] = None


class MHATokenToKVPoolHost:
    """SGLang's MHA host pool in its three layouts."""

    def __init__(self, layout: str, size: int, page_size: int, layer_num: int = 2,
                 head_num: int = 2, head_dim: int = 16, dtype=torch.float16):
        assert layout in ("layer_first", "page_first", "page_first_direct")
        self.layout, self.size, self.page_size = layout, size, page_size
        self.layer_num, self.head_num, self.head_dim, self.dtype = layer_num, head_num, head_dim, dtype
        self.page_num = size // page_size
        if layout == "layer_first":
            dims = (2, layer_num, size, head_num, head_dim)
        elif layout == "page_first":
            dims = (2, size, layer_num, head_num, head_dim)
        else:
            dims = (2, self.page_num, layer_num, page_size, head_num, head_dim)
        self.kv_buffer = torch.zeros(dims, dtype=dtype)
        self.size_per_token = 2 * layer_num * head_num * head_dim * itemsize(dtype)

    def page_bytes(self) -> int:
        return self.page_size * self.size_per_token

    def get_page_buffer_meta(self, indices):
        assert len(indices) % self.page_size == 0
        ptrs = []
        base = self.kv_buffer.data_ptr()
        indices = indices.tolist()
        item = itemsize(self.dtype)
        token = self.head_num * self.head_dim * item  # one token of one layer's K (or V)
        v_offset = self.layer_num * self.size * token
        if self.layout == "layer_first":
            for i in range(0, len(indices), self.page_size):
                for layer in range(self.layer_num):
                    k = base + indices[i] * token + layer * self.size * token
                    ptrs += [k, k + v_offset]
            return ptrs, [self.page_size * token] * len(ptrs)
        for i in range(0, len(indices), self.page_size):
            k = base + indices[i] * self.layer_num * token
            ptrs += [k, k + v_offset]
        return ptrs, [self.layer_num * self.page_size * token] * len(ptrs)

    def _page(self, index: int):
        if self.layout == "layer_first":
            return self.kv_buffer[:, :, index:index + self.page_size]
        if self.layout == "page_first":
            return self.kv_buffer[:, index:index + self.page_size]
        real = index // self.page_size
        return self.kv_buffer[:, real:real + 1]

    def get_data_page(self, index, flat: bool = True):
        page = self._page(index)
        return page.flatten() if flat else page

    def get_dummy_flat_data_page(self):
        return torch.zeros(self._page(0).numel(), dtype=self.dtype)

    def set_from_flat_data_page(self, index: int, data_page) -> None:
        page = self._page(index)
        page.copy_(data_page.reshape(page.shape))


class MambaPoolHost:
    """SGLang's Mamba host pool, page-first layouts: one slot = temporal + conv states."""

    def __init__(self, layout: str, size: int, layers: int = 2, temporal_shape=(2, 8, 8),
                 conv_shapes=((24, 3),), temporal_dtype=torch.float32, conv_dtype=torch.bfloat16):
        self.layout, self.size, self.page_size = layout, size, 1
        self.num_mamba_layers = layers
        self.temporal_buffer = torch.zeros((size, layers, 1) + tuple(temporal_shape),
                                           dtype=temporal_dtype)
        self.conv_buffer = [torch.zeros((size, layers, 1) + tuple(s), dtype=conv_dtype)
                            for s in conv_shapes]

    def _tensors(self, index: int):
        yield self.temporal_buffer[index]
        for c in self.conv_buffer:
            yield c[index]

    def slot_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._tensors(0))

    def get_page_buffer_meta(self, indices):
        ptrs, sizes = [], []
        for i in indices.tolist():
            for t in self._tensors(i):
                ptrs.append(t.data_ptr())
                sizes.append(t.numel() * t.element_size())
        return ptrs, sizes

    def get_data_page(self, index, flat: bool = True):
        return torch.cat([t.contiguous().view(torch.uint8).reshape(-1)
                          for t in self._tensors(index)])


@dataclasses.dataclass
class PoolEntry:
    name: PoolName
    host_pool: Any
    device_pool: Any = None
    layer_mapper: Any = None
    is_primary_index_anchor: bool = False


class HostPoolGroup:
    """SGLang's HostPoolGroup: the anchor (KV) pool and its side pools."""

    def __init__(self, entries: List[PoolEntry]):
        self.entries = list(entries)
        self.entry_map = {e.name: e for e in entries}
        anchors = [e for e in entries if e.is_primary_index_anchor]
        self.anchor_entry = anchors[0] if anchors else entries[0]
        anchor = self.anchor_entry.host_pool
        self.layout, self.page_size, self.size = anchor.layout, anchor.page_size, anchor.size

    def get_page_buffer_meta(self, indices):
        return self.anchor_entry.host_pool.get_page_buffer_meta(indices)

    def get_data_page(self, index, flat: bool = True):
        return self.anchor_entry.host_pool.get_data_page(index, flat)

    def get_dummy_flat_data_page(self):
        return self.anchor_entry.host_pool.get_dummy_flat_data_page()

    def set_from_flat_data_page(self, index, data_page):
        self.anchor_entry.host_pool.set_from_flat_data_page(index, data_page)


def hybrid_group(layout: str, pages: int, page_size: int, slots: int):
    """[kv (anchor), mamba] as SGLang's hybrid stack builds it."""
    kv = MHATokenToKVPoolHost(layout, pages * page_size, page_size)
    mamba = MambaPoolHost(layout, slots)
    group = HostPoolGroup([PoolEntry(PoolName.KV, kv, is_primary_index_anchor=True),
                           PoolEntry(PoolName.MAMBA, mamba)])
    return group, kv, mamba
