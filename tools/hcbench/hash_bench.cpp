// hcbench: the chained page digest (storage/sha256_page_hasher) that KV events, L3 keys
// and `inspect --blocks` compute per page, and the listing of a tree's device pages.
//
//   BM_PageHash/<page>       hash_page of one page chained after the previous digest
//   BM_Sha256Floor/<bytes>   OpenSSL's SHA-256 of the same bytes through one EVP context
//                            kept across calls (what a digest costs with no set-up)
//   BM_ListDeviceBlocks/<page>/<kept>  radix_tree::device_blocks() of a 256 K-token tree
//                            (what the instance's actor does for inspect --blocks) and its
//                            JSON text (what the scheduler then writes), timed apart per
//                            page; kept 1: the tree keeps its digests (events on), 0: they
//                            are computed for the call
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <chrono>
#include <memory>
#include <random>
#include <vector>

#include "actors/node/inspect_document.hpp"
#include "actors/radix_cache/radix_cache.hpp"
#include "storage/sha256_page_hasher.hpp"

namespace {

using namespace hc;

std::vector<token_id> random_tokens(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<token_id> t(n);
  for (auto& x : t)
    x = static_cast<token_id>(rng() % 151936);
  return t;
}

void BM_PageHash(benchmark::State& state) {
  const auto page = static_cast<std::size_t>(state.range(0));
  const std::vector<token_id> tokens = random_tokens(page * 1024, 1);
  sha256_page_hasher h;
  page_digest prior = h.hash_page(nullptr, std::span(tokens).first(page));
  std::size_t i = 0;
  for (auto _ : state) {
    prior = h.hash_page(&prior, std::span(tokens).subspan((i++ % 1024) * page, page));
    benchmark::DoNotOptimize(prior);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Sha256Floor(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  std::vector<unsigned char> in(bytes, 7);
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char out[32];
  for (auto _ : state) {
    EVP_DigestInit_ex2(ctx, md, nullptr);
    EVP_DigestUpdate(ctx, in.data(), in.size());
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx, out, &len);
    in[0] = out[0];  // chained, as the pages are
    benchmark::DoNotOptimize(out);
  }
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  state.SetItemsProcessed(state.iterations());
}

void BM_ListDeviceBlocks(benchmark::State& state) {
  const auto page = static_cast<std::size_t>(state.range(0));
  const bool kept = state.range(1) != 0;
  constexpr std::size_t tokens = 256 * 1024, conversation = 4096;
  auto hasher = std::make_shared<sha256_page_hasher>();
  cache_config cfg;
  cfg.page_size = page;
  cfg.kv_tokens = tokens + 4 * conversation;
  cfg.slots = 128;
  cfg.enable_events = kept;
  radix_cache cache(cfg, hasher.get());
  for (std::size_t c = 0; c < tokens / conversation; ++c) {
    const std::vector<token_id> key = random_tokens(conversation, 100 + c);
    std::vector<kv_index> ids;
    const slot_id s = cache.slots().alloc_one();
    if (s == no_slot || !cache.kv().alloc_extend(0, 0, key.size(), ids))
      return state.SkipWithError("the tree's pools are too small");
    if (!cache.tree().insert(0, key, ids, s).ok()) return state.SkipWithError("insert failed");
    (void)cache.tree().drain_events();
  }
  block_listing listing;
  listing.names[0] = "";
  std::size_t listed = 0;
  double list_s = 0, render_s = 0;
  for (auto _ : state) {
    std::string text;
    const auto t0 = std::chrono::steady_clock::now();
    listing.blocks = cache.tree().device_blocks();
    const auto t1 = std::chrono::steady_clock::now();
    text.reserve(blocks_json_bound(listing));
    append_blocks_json(text, listing);
    const auto t2 = std::chrono::steady_clock::now();
    list_s += std::chrono::duration<double>(t1 - t0).count();
    render_s += std::chrono::duration<double>(t2 - t1).count();
    listed = listing.blocks.size();
    benchmark::DoNotOptimize(text.data());
  }
  const double per_page =
      1e9 / static_cast<double>(state.iterations()) / static_cast<double>(listed);
  state.counters["list_ns_per_page"] = list_s * per_page;
  state.counters["render_ns_per_page"] = render_s * per_page;
  state.counters["pages"] = static_cast<double>(listed);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(listed));
}

}  // namespace

BENCHMARK(BM_PageHash)->ArgName("page")->Arg(1)->Arg(16)->Arg(64);
BENCHMARK(BM_Sha256Floor)->ArgName("bytes")->Arg(36)->Arg(96)->Arg(288);
BENCHMARK(BM_ListDeviceBlocks)
    ->ArgNames({"page", "kept"})
    ->ArgsProduct({{1, 64}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
