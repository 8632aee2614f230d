#pragma once
// Test-only access to radix_tree internals, for states that the public API cannot
// create (spec §8.2 scenarios that Unified builds by hand). Never used by the product.

#include "actors/radix_cache/radix_tree.hpp"

namespace hc {

struct radix_tree_test_access {
  /// Adds one full lock to `ref` alone (not its ancestors, no mamba lock), moving its
  /// tokens to the protected size the way inc_lock would.
  static void add_lone_full_lock(radix_tree& t, node_ref ref) {
    radix_node* n = ref.node;
    if (n->full_lock_ref == 0) {
      t.sizes_.full_evictable -= n->value.size();
      t.sizes_.full_protected += n->value.size();
    }
    ++n->full_lock_ref;
  }
  /// Undoes add_lone_full_lock.
  static void drop_lone_full_lock(radix_tree& t, node_ref ref) {
    radix_node* n = ref.node;
    if (n->full_lock_ref == 1) {
      t.sizes_.full_protected -= n->value.size();
      t.sizes_.full_evictable += n->value.size();
    }
    --n->full_lock_ref;
  }
};

}  // namespace hc
