// hybridcache._native: the C++ client (schema/client.hpp) for Python: node calls,
// sessions and steps with the protocol v2 command and result kinds, the L3 Store, and the
// raw-address copies the SGLang backend moves pages with.
//
// Threading and fork: call_site.hpp (a connection's calls run on an I/O thread of its own,
// or on the thread that connected).
#include <pybind11/numpy.h>
#include <pybind11/operators.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "actors/common/command.hpp"
#include "actors/common/instance_spec.hpp"
#include "actors/common/pool_info.hpp"
#include "actors/common/status.hpp"
#include "actors/common/version.hpp"
#include "gpu/cuda_ipc_mapping.hpp"
#include "schema/client.hpp"
#include "tools/python/call_site.hpp"
#include "tools/python/errors.hpp"
#include "tools/python/token_list.hpp"

namespace py = pybind11;

namespace hc::python {
namespace {

/// A session's client object, only touched where its connection's calls run.
struct session_box {
  std::unique_ptr<client_session> s;
  client_session& live() {
    if (!s) throw not_found_error("not_found: the session is closed");
    return *s;
  }
};

class py_session {
 public:
  py_session(std::shared_ptr<connection> conn, std::shared_ptr<session_box> box)
      : conn_(std::move(conn)), box_(std::move(box)) {}
  ~py_session() {
    // Closes it on the node, where the connection's calls run, without waiting.
    if (!closed_) conn_->post([box = box_] { box->s.reset(); });
  }

  std::vector<command_result> step(std::vector<command> cmds) {
    return conn_->call<std::vector<command_result>>(
        [box = box_, cmds = std::move(cmds)] { return value_or_raise(box->live().step(cmds)); });
  }
  std::uint64_t begin_forward(std::uint64_t batch) {
    return conn_->call<std::uint64_t>(
        [box = box_, batch] { return value_or_raise(box->live().begin_forward(batch)); });
  }
  void end_forward(std::uint64_t batch) {
    conn_->call<int>([box = box_, batch] {
      ok_or_raise(box->live().end_forward(batch));
      return 0;
    });
  }
  pool_info pools() {
    return conn_->call<pool_info>([box = box_] { return box->live().pools(); });
  }
  py::bytes read_slot(slot_id slot) {
    auto b = conn_->call<std::vector<std::byte>>(
        [box = box_, slot] { return value_or_raise(box->live().read_slot(slot)); });
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  void write_slot(slot_id slot, const std::string& data) {
    conn_->call<int>([box = box_, slot, data] {
      ok_or_raise(box->live().write_slot(slot, std::as_bytes(std::span(data))));
      return 0;
    });
  }
  py::bytes read_kv_page(std::uint64_t page) {
    auto b = conn_->call<std::vector<std::byte>>(
        [box = box_, page] { return value_or_raise(box->live().read_kv_page(page)); });
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  void write_kv_page(std::uint64_t page, const std::string& data) {
    conn_->call<int>([box = box_, page, data] {
      ok_or_raise(box->live().write_kv_page(page, std::as_bytes(std::span(data))));
      return 0;
    });
  }
  void close() {
    if (closed_) return;
    conn_->check_caller();  // another thread's close changes nothing: the drop still releases
    closed_ = true;
    conn_->call<int>([box = box_] {
      if (!box->s) return 0;
      const status st = box->s->close();
      box->s.reset();
      ok_or_raise(st);
      return 0;
    });
  }
  bool closed() const noexcept { return closed_; }

 private:
  std::shared_ptr<connection> conn_;
  std::shared_ptr<session_box> box_;
  bool closed_ = false;  ///< Python side (under the GIL)
};

/// A store's client object, only touched where its connection's calls run.
struct store_box {
  std::unique_ptr<client_store> s;
  client_store& live() {
    if (!s) throw not_found_error("not_found: the store is closed");
    return *s;
  }
};

/// (key, [(offset, length), ...]) per value, as Python passes them.
using py_entries =
    std::vector<std::pair<std::string, std::vector<std::pair<std::uint64_t, std::uint64_t>>>>;

std::vector<store_entry> to_entries(const py_entries& in) {
  std::vector<store_entry> out;
  out.reserve(in.size());
  for (const auto& [key, segs] : in) {
    store_entry& e = out.emplace_back();
    e.key = key;
    e.segments.reserve(segs.size());
    for (const auto& [offset, length] : segs)
      e.segments.push_back({offset, length});
  }
  return out;
}

class py_store {
 public:
  /// What the store's open learnt, kept for the properties (no call to the node).
  struct facts {
    std::string arena_name;
    std::uint64_t arena_bytes = 0;
    std::size_t max_keys = 0;
  };
  py_store(std::shared_ptr<connection> conn, std::shared_ptr<store_box> box, facts f)
      : conn_(std::move(conn)), box_(std::move(box)), facts_(std::move(f)) {}
  ~py_store() {
    if (!closed_) conn_->post([box = box_] { box->s.reset(); });
  }

  std::pair<std::uint32_t, std::vector<std::uint32_t>> exists(std::vector<std::string> keys,
                                                              std::vector<store_sidecar> sidecars) {
    using reply_t = std::pair<std::uint32_t, std::vector<std::uint32_t>>;
    return conn_->call<reply_t>(
        [box = box_, keys = std::move(keys), sidecars = std::move(sidecars)] {
          store_exists_reply r = value_or_raise(box->live().exists(keys, sidecars));
          return reply_t{r.kv_hit_pages, std::move(r.restorable_pages)};
        });
  }
  std::vector<bool> get(store_pool pool, const py_entries& entries) {
    return conn_->call<std::vector<bool>>([box = box_, pool, e = to_entries(entries)] {
      return value_or_raise(box->live().get(pool, e));
    });
  }
  std::vector<bool> set(store_pool pool, const py_entries& entries) {
    return conn_->call<std::vector<bool>>([box = box_, pool, e = to_entries(entries)] {
      return value_or_raise(box->live().set(pool, e));
    });
  }
  std::vector<bool> set_from(store_pool pool, const py_entries& entries,
                             std::vector<std::uintptr_t> addresses, std::uint64_t part_bytes) {
    return conn_->call<std::vector<bool>>(
        [box = box_, pool, e = to_entries(entries), a = std::move(addresses), part_bytes] {
          return value_or_raise(box->live().set_from(pool, e, a, part_bytes));
        });
  }
  std::vector<bool> get_into(store_pool pool, const py_entries& entries,
                             std::vector<std::uintptr_t> addresses, std::uint64_t part_bytes) {
    return conn_->call<std::vector<bool>>(
        [box = box_, pool, e = to_entries(entries), a = std::move(addresses), part_bytes] {
          return value_or_raise(box->live().get_into(pool, e, a, part_bytes));
        });
  }
  std::uint64_t clear() {
    return conn_->call<std::uint64_t>([box = box_] { return value_or_raise(box->live().clear()); });
  }
  void close() {
    if (closed_) return;
    conn_->check_caller();  // another thread's close changes nothing: the drop still releases
    closed_ = true;
    conn_->call<int>([box = box_] {
      box->s.reset();
      return 0;
    });
  }
  const std::string& arena_name() const noexcept { return facts_.arena_name; }
  std::uint64_t arena_bytes() const noexcept { return facts_.arena_bytes; }
  std::size_t max_keys() const noexcept { return facts_.max_keys; }
  bool closed() const noexcept { return closed_; }

 private:
  std::shared_ptr<connection> conn_;
  std::shared_ptr<store_box> box_;
  facts facts_;
  bool closed_ = false;  ///< Python side (under the GIL)
};

/// The longest timeout a connection takes, in seconds: a year — a bound well inside the
/// client's int64 milliseconds, which an infinity or 1e300 seconds are not.
constexpr double max_timeout_s = 365.0 * 24 * 3600;

std::shared_ptr<connection> make_connection(double timeout_s, bool io_thread) {
  if (!(timeout_s > 0 && timeout_s <= max_timeout_s))  // NaN fails both
    throw invalid_argument_error(
        "invalid_argument: timeout must be > 0 and at most a year (31536000 s), not " +
        std::to_string(timeout_s));
  // Rounded up: a positive timeout never becomes 0 ms, which the client takes as no limit.
  return std::make_shared<connection>(
      io_thread ? call_site::io_thread : call_site::calling_thread,
      std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout_s * 1000))));
}

class py_node {
 public:
  py_node(std::string address, std::string token, double timeout_s, bool io_thread)
      : conn_(make_connection(timeout_s, io_thread)) {
    connection* c = conn_.get();
    c->call<int>([c, address = std::move(address), token = std::move(token)] {
      c->c = value_or_raise(
          client::connect(address, token, c->timeout, [c] { return c->interrupted_now(); }));
      return 0;
    });
  }
  ping_reply ping() {
    connection* c = conn_.get();
    return c->call<ping_reply>([c] { return value_or_raise(c->live().ping()); });
  }
  std::vector<std::pair<std::string, double>> stats() {
    using stats_t = std::vector<std::pair<std::string, double>>;
    connection* c = conn_.get();
    return c->call<stats_t>([c] { return value_or_raise(c->live().stats()); });
  }
  std::string inspect(bool blocks) {
    connection* c = conn_.get();
    return c->call<std::string>([c, blocks] { return value_or_raise(c->live().inspect(blocks)); });
  }
  void drain() {
    connection* c = conn_.get();
    c->call<int>([c] {
      ok_or_raise(c->live().drain());
      return 0;
    });
  }
  std::unique_ptr<py_store> store(std::string identity) {
    connection* c = conn_.get();
    auto box = std::make_shared<store_box>();
    py_store::facts f;
    try {
      f = c->call<py_store::facts>([c, box, identity = std::move(identity)] {
        box->s = value_or_raise(c->live().open_store(identity));
        return py_store::facts{box->s->arena_name(), box->s->arena().size(), box->s->max_keys()};
      });
    } catch (const timeout_error&) {
      c->post([box] { box->s.reset(); });
      throw;
    }
    return std::make_unique<py_store>(conn_, std::move(box), std::move(f));
  }
  std::unique_ptr<py_session> open(instance_spec spec) {
    connection* c = conn_.get();
    auto box = std::make_shared<session_box>();
    try {
      c->call<int>([c, box, spec = std::move(spec)] {
        box->s = value_or_raise(c->live().open(spec));
        return 0;
      });
    } catch (const timeout_error&) {
      c->post([box] { box->s.reset(); });  // a late open is closed where calls run
      throw;
    }
    return std::make_unique<py_session>(conn_, std::move(box));
  }

 private:
  std::shared_ptr<connection> conn_;
};

// ---- copies between caller memory (raw addresses) and a buffer ----------------------------

/// One copy of a batch: buffer[offsets[i] .. +lengths[i]) <-> the memory at addresses[i].
/// The buffer ranges are checked (InvalidArgument); the addresses are the caller's promise
/// (host-pool pointers from get_page_buffer_meta, tensor data_ptr()s), as with memmove.
void copy_batch(py::buffer buf, const std::vector<std::uint64_t>& offsets,
                const std::vector<std::uint64_t>& addresses,
                const std::vector<std::uint64_t>& lengths, bool into_buffer) {
  if (offsets.size() != addresses.size() || offsets.size() != lengths.size())
    throw invalid_argument_error(
        "invalid_argument: offsets, addresses and lengths differ in length");
  py::buffer_info info = buf.request(into_buffer);
  // The offsets are bytes of the buffer's memory: a strided view (arr[::2], arr[::-1]) is
  // not that memory in order, and a reversed one would be written past its end.
  if (PyBuffer_IsContiguous(info.view(), 'A') == 0)
    throw invalid_argument_error(
        "invalid_argument: the buffer is not contiguous (a strided view); pass a contiguous one");
  const auto size = static_cast<std::uint64_t>(info.size * info.itemsize);
  auto* base = static_cast<std::byte*>(info.ptr);
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    if (offsets[i] > size || lengths[i] > size - offsets[i])
      throw invalid_argument_error("invalid_argument: range " + std::to_string(i) + " [" +
                                   std::to_string(offsets[i]) + ", +" + std::to_string(lengths[i]) +
                                   ") is outside the " + std::to_string(size) + "-byte buffer");
    if (lengths[i] != 0 && addresses[i] == 0)
      throw invalid_argument_error("invalid_argument: address " + std::to_string(i) + " is null");
  }
  py::gil_scoped_release unlocked;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    auto* mem = reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(addresses[i]));
    if (into_buffer)
      std::memcpy(base + offsets[i], mem, lengths[i]);
    else
      std::memcpy(mem, base + offsets[i], lengths[i]);
  }
}

// ---- bindings of the vocabulary -----------------------------------------------------------

/// A command kind with a `req` only.
template <class T>
void bind_request_command(py::module_& m, const char* name, const char* doc) {
  py::class_<T>(m, name, doc)
      .def(py::init([](request_handle req) { return T{req}; }), py::arg("req"))
      .def_readwrite("req", &T::req)
      .def(py::self == py::self);
}

/// `at` and `count` of a Create / Append: both (a range of the session's token arena) or
/// neither (the tokens in the command).
std::optional<cmd::token_range> token_range_of(const token_list& tokens,
                                               std::optional<std::uint64_t> at,
                                               std::optional<std::uint64_t> count) {
  if (at.has_value() != count.has_value())
    throw py::value_error("give both `at` and `count` (a range of the token arena) or neither");
  if (!at) return std::nullopt;
  if (!tokens.ids.empty())
    throw py::value_error("give `tokens` or a range of the token arena (`at`, `count`), not both");
  return cmd::token_range{*at, *count};
}

/// A command's `tokens` field: read back as a list, set from what a constructor takes.
template <class C>
const std::vector<token_id>& tokens_of(const C& c) {
  return c.tokens;
}
template <class C>
void set_tokens(C& c, token_list tokens) {
  c.tokens = std::move(tokens.ids);
}

/// A command's range of the token arena as Python reads it back: (at, count), or None.
template <class C>
py::object shared_range_of(const C& c) {
  if (!c.shared) return py::none();
  return py::make_tuple(c.shared->at, c.shared->count);
}

/// Create and Append: `req`, then `tokens` or a range of the session's token arena (`at`,
/// `count`); `shared` reads the range back as (at, count) or None.
template <class C>
void bind_token_command(py::module_& m, const char* name, const char* doc) {
  py::class_<C>(m, name, doc)
      .def(py::init([](request_handle req, token_list tokens, std::optional<std::uint64_t> at,
                       std::optional<std::uint64_t> count) {
             C c;
             c.req = req;
             c.shared = token_range_of(tokens, at, count);
             c.tokens = std::move(tokens.ids);
             return c;
           }),
           py::arg("req"), py::arg("tokens") = token_list{}, py::kw_only(),
           py::arg("at") = py::none(), py::arg("count") = py::none())
      .def_readwrite("req", &C::req)
      .def_property("tokens", &tokens_of<C>, &set_tokens<C>)
      .def_property_readonly("shared", &shared_range_of<C>)
      .def(py::self == py::self);
}

void bind_commands(py::module_& m) {
  bind_token_command<cmd::create>(
      m, "Create",
      "Registers request `req` with its prompt: `tokens` (a sequence of ints or a 1-D integer "
      "array: NumPy, array.array, a CPU torch tensor), or the `count` tokens at `at` of the "
      "session's token arena (Session.token_arena).");
  bind_token_command<cmd::append>(m, "Append",
                                  "Appends generated tokens to request `req`: `tokens`, or the "
                                  "`count` tokens at `at` of the session's token arena.");
  bind_request_command<cmd::match>(m, "Match", "Prefix match of the prompt, copy-on-write.");
  bind_request_command<cmd::lock>(m, "Lock", "Locks the request's last node.");
  bind_request_command<cmd::unlock>(m, "Unlock", "Unlocks the request's last node.");
  bind_request_command<cmd::alloc_req>(m, "AllocReq", "Row, working slot, ping-pong slots.");
  bind_request_command<cmd::prepare_decode>(m, "PrepareDecode", "Decode tracking.");
  bind_request_command<cmd::abort>(m, "Abort", "Releases the request without insert.");
  bind_request_command<cmd::not_admitted>(m, "NotAdmitted",
                                          "Frees the COW slot of a request not admitted.");
  py::class_<cmd::alloc_kv>(m, "AllocKv",
                            "`count` KV ids at row position `start`; with `to_end`, the rest of "
                            "the request (from its row's end to its last token; start and count "
                            "ignored), so admission and KV allocation fit in one step.")
      .def(py::init([](request_handle req, std::uint64_t start, std::uint64_t count) {
             return cmd::alloc_kv{req, start, count};
           }),
           py::arg("req"), py::arg("start"), py::arg("count"))
      .def(py::init([](request_handle req, bool to_end) {
             return cmd::alloc_kv{req, 0, 0, to_end};
           }),
           py::arg("req"), py::arg("to_end"))
      .def_readwrite("req", &cmd::alloc_kv::req)
      .def_readwrite("start", &cmd::alloc_kv::start)
      .def_readwrite("count", &cmd::alloc_kv::count)
      .def_readwrite("to_end", &cmd::alloc_kv::to_end)
      .def(py::self == py::self);
  py::class_<cmd::track>(m, "Track", "A snapshot recorded at `seqlen`; `flip` next_track_idx.")
      .def(py::init([](request_handle req, std::uint64_t seqlen, bool flip) {
             return cmd::track{req, seqlen, flip};
           }),
           py::arg("req"), py::arg("seqlen"), py::arg("flip") = false)
      .def_readwrite("req", &cmd::track::req)
      .def_readwrite("seqlen", &cmd::track::seqlen)
      .def_readwrite("flip", &cmd::track::flip)
      .def(py::self == py::self);
  py::class_<cmd::prepare_extend>(m, "PrepareExtend",
                                  "Prefill tracking for `count` tokens after `start`.")
      .def(py::init([](request_handle req, std::uint64_t start, std::uint64_t count) {
             return cmd::prepare_extend{req, start, count};
           }),
           py::arg("req"), py::arg("start"), py::arg("count"))
      .def_readwrite("req", &cmd::prepare_extend::req)
      .def_readwrite("start", &cmd::prepare_extend::start)
      .def_readwrite("count", &cmd::prepare_extend::count)
      .def(py::self == py::self);
  py::class_<cmd::process_decode>(m, "ProcessDecode",
                                  "A decode step's result; `accepted_drafts` > 0 for speculative "
                                  "decoding (extra_buffer only, as in SGLang).")
      .def(py::init([](request_handle req, bool finished, std::uint64_t accepted_drafts) {
             return cmd::process_decode{req, finished, accepted_drafts};
           }),
           py::arg("req"), py::arg("finished") = false, py::arg("accepted_drafts") = 0)
      .def_readwrite("req", &cmd::process_decode::req)
      .def_readwrite("finished", &cmd::process_decode::finished)
      .def_readwrite("accepted_drafts", &cmd::process_decode::accepted_drafts)
      .def(py::self == py::self);
  py::class_<cmd::cache_unfinished>(m, "CacheUnfinished", "cache_unfinished_req(fill_len).")
      .def(py::init([](request_handle req, std::uint64_t fill_len) {
             return cmd::cache_unfinished{req, fill_len};
           }),
           py::arg("req"), py::arg("fill_len"))
      .def_readwrite("req", &cmd::cache_unfinished::req)
      .def_readwrite("fill_len", &cmd::cache_unfinished::fill_len)
      .def(py::self == py::self);
  py::class_<cmd::finish>(m, "Finish", "cache_finished_req; expected_len > 0 is checked.")
      .def(py::init([](request_handle req, std::uint64_t expected_len) {
             return cmd::finish{req, expected_len};
           }),
           py::arg("req"), py::arg("expected_len") = 0)
      .def_readwrite("req", &cmd::finish::req)
      .def_readwrite("expected_len", &cmd::finish::expected_len)
      .def(py::self == py::self);
  py::class_<cmd::evict>(m, "Evict", "Evicts `tokens` KV tokens, then `slots` SSM slots.")
      .def(py::init([](std::uint64_t tokens, std::uint64_t slots) {
             return cmd::evict{tokens, slots};
           }),
           py::arg("tokens") = 0, py::arg("slots") = 0)
      .def_readwrite("tokens", &cmd::evict::tokens)
      .def_readwrite("slots", &cmd::evict::slots)
      .def(py::self == py::self);
  py::class_<cmd::check>(m, "Check", "Tree totals; `full`: the sanity check (idle only).")
      .def(py::init([](bool full) { return cmd::check{full}; }), py::arg("full") = false)
      .def_readwrite("full", &cmd::check::full)
      .def(py::self == py::self);
  py::class_<cmd::take_ops>(m, "TakeOps", "Queues the data ops of `reqs` for forward `batch`.")
      .def(py::init([](std::vector<request_handle> reqs, std::uint64_t batch) {
             return cmd::take_ops{std::move(reqs), batch};
           }),
           py::arg("reqs"), py::arg("batch"))
      .def_readwrite("reqs", &cmd::take_ops::reqs)
      .def_readwrite("batch", &cmd::take_ops::batch)
      .def(py::self == py::self);
  py::class_<cmd::lookup>(
      m, "Lookup",
      "Matches `tokens` (as Create takes them; or the `count` tokens at `at` of the session's "
      "token arena) without a request (no COW, no lock); "
      "`without_indices`: the result's `indices` left empty.")
      .def(py::init([](token_list tokens, bool without_indices, std::optional<std::uint64_t> at,
                       std::optional<std::uint64_t> count) {
             cmd::lookup c;
             c.shared = token_range_of(tokens, at, count);
             c.tokens = std::move(tokens.ids);
             c.without_indices = without_indices;
             return c;
           }),
           py::arg("tokens") = token_list{}, py::arg("without_indices") = false, py::kw_only(),
           py::arg("at") = py::none(), py::arg("count") = py::none())
      .def_property("tokens", &tokens_of<cmd::lookup>, &set_tokens<cmd::lookup>)
      .def_readwrite("without_indices", &cmd::lookup::without_indices)
      .def_property_readonly("shared", &shared_range_of<cmd::lookup>)
      .def(py::self == py::self);
  py::class_<cmd::prefetch>(m, "Prefetch", "Starts / polls the storage prefetch of `req`.")
      .def(py::init([](request_handle req, bool admit_now) {
             return cmd::prefetch{req, admit_now};
           }),
           py::arg("req"), py::arg("admit_now") = false)
      .def_readwrite("req", &cmd::prefetch::req)
      .def_readwrite("admit_now", &cmd::prefetch::admit_now)
      .def(py::self == py::self);
  py::class_<cmd::pin>(
      m, "Pin",
      "Keeps the cached resumable prefix of `tokens` (as Create takes them; or the `count` "
      "tokens at `at` of the session's token arena) on the device until Unpin, the end of "
      "`ttl_ms` (0: none; at most 7 days) or the session's close.")
      .def(py::init([](token_list tokens, std::uint64_t ttl_ms, std::optional<std::uint64_t> at,
                       std::optional<std::uint64_t> count) {
             cmd::pin c;
             c.shared = token_range_of(tokens, at, count);
             c.tokens = std::move(tokens.ids);
             c.ttl_ms = ttl_ms;
             return c;
           }),
           py::arg("tokens") = token_list{}, py::arg("ttl_ms") = 0, py::kw_only(),
           py::arg("at") = py::none(), py::arg("count") = py::none())
      .def_property("tokens", &tokens_of<cmd::pin>, &set_tokens<cmd::pin>)
      .def_readwrite("ttl_ms", &cmd::pin::ttl_ms)
      .def_property_readonly("shared", &shared_range_of<cmd::pin>)
      .def(py::self == py::self);
  py::class_<cmd::unpin>(m, "Unpin", "Releases pin `pin` (the id a Pin result gave).")
      .def(py::init([](std::uint64_t pin) { return cmd::unpin{pin}; }), py::arg("pin"))
      .def_readwrite("pin", &cmd::unpin::pin)
      .def(py::self == py::self);
  py::class_<cmd::demote>(
      m, "Demote",
      "Takes the cached path of `tokens` (as Create takes them; or the `count` tokens at `at` "
      "of the session's token arena) off the device now: demoted to the host tier (still "
      "resumable), or evicted without one. What a request or pin holds, or another branch "
      "on the device extends, stays.")
      .def(py::init([](token_list tokens, std::optional<std::uint64_t> at,
                       std::optional<std::uint64_t> count) {
             cmd::demote c;
             c.shared = token_range_of(tokens, at, count);
             c.tokens = std::move(tokens.ids);
             return c;
           }),
           py::arg("tokens") = token_list{}, py::kw_only(), py::arg("at") = py::none(),
           py::arg("count") = py::none())
      .def_property("tokens", &tokens_of<cmd::demote>, &set_tokens<cmd::demote>)
      .def_property_readonly("shared", &shared_range_of<cmd::demote>)
      .def(py::self == py::self);
}

#define HC_RO(cls, field) .def_readonly(#field, &cls::field)

/// A result's KV ids as a NumPy int32 array: one copy of the ids, where reading the field
/// builds a list of Python ints (16 K ids: 2 µs against ~115 µs) that a worker may then turn
/// into a tensor (torch.from_numpy shares the array's memory).
template <class R, std::vector<kv_index> R::*Field>
py::array_t<kv_index> ids_array(const R& r) {
  const std::vector<kv_index>& ids = r.*Field;
  return py::array_t<kv_index>(static_cast<py::ssize_t>(ids.size()), ids.data());
}
#define HC_IDS_ARRAY(cls, field)                                                \
  .def_property_readonly(#field "_array", (&ids_array<cls, &cls::field>),       \
                         "`" #field                                             \
                         "` as a NumPy int32 array (a copy made at each read; " \
                         "reading `" #field "` builds a list of ints)")

void bind_results(py::module_& m) {
  py::class_<res::match>(
      m, "Match", "The prefix match of a request: its length, the KV ids, the node slot, COW.")
      HC_RO(res::match, prefix_len) HC_RO(res::match, kv_matched) HC_RO(res::match, indices)
          HC_IDS_ARRAY(res::match, indices) HC_RO(res::match, node_slot)
              HC_RO(res::match, branching) HC_RO(res::match, working)
                  HC_RO(res::match, loaded_tokens);
  py::class_<res::lookup>(m, "Lookup", "A lookup without a request: the prefix and its KV ids.")
      HC_RO(res::lookup, prefix_len) HC_RO(res::lookup, kv_matched) HC_RO(res::lookup, indices)
          HC_IDS_ARRAY(res::lookup, indices) HC_RO(res::lookup, node_slot)
              HC_RO(res::lookup, branching);
  py::class_<res::alloc_req>(m, "AllocReq", "The request row, working slot and ping-pong slots.")
      HC_RO(res::alloc_req, row) HC_RO(res::alloc_req, working) HC_RO(res::alloc_req, pingpong);
  py::class_<res::alloc_kv>(m, "AllocKv", "The KV ids allocated.") HC_RO(res::alloc_kv, indices)
      HC_IDS_ARRAY(res::alloc_kv, indices);
  py::class_<res::track>(m, "Track", "Which slot a snapshot keeps.") HC_RO(res::track, keep_slot);
  py::class_<res::prepare_extend>(
      m, "PrepareExtend", "Prefill tracking: the mask, the kernel seqlen and the track slot.")
      HC_RO(res::prepare_extend, mask) HC_RO(res::prepare_extend, kernel_seqlen)
          HC_RO(res::prepare_extend, track_slot);
  py::class_<res::prepare_decode>(m, "PrepareDecode",
                                  "Decode tracking: the mask and the track slot.")
      HC_RO(res::prepare_decode, mask) HC_RO(res::prepare_decode, track_slot);
  py::class_<res::cache_unfinished>(m, "CacheUnfinished",
                                    "What cache_unfinished_req inserted and protects.")
      HC_RO(res::cache_unfinished, inserted) HC_RO(res::cache_unfinished, protected_len)
          HC_RO(res::cache_unfinished, prefix) HC_IDS_ARRAY(res::cache_unfinished, prefix)
              HC_RO(res::cache_unfinished, node_slot);
  py::class_<res::finish>(m, "Finish", "What cache_finished_req inserted.")
      HC_RO(res::finish, inserted) HC_RO(res::finish, cached_len) HC_RO(res::finish, mamba_exist);
  py::class_<res::evict>(m, "Evict", "What an eviction freed.") HC_RO(res::evict, tokens_evicted)
      HC_RO(res::evict, mamba_evicted) HC_RO(res::evict, tokens_freed_total)
          HC_RO(res::evict, slots_freed_total);
  py::class_<res::check>(m, "Check", "Tree totals and, for a full check, the sanity check.")
      HC_RO(res::check, tree_tokens) HC_RO(res::check, tree_slots) HC_RO(res::check, sanity)
          HC_RO(res::check, sanity_detail);
  py::class_<res::take_ops>(m, "TakeOps", "The data ops queued for a forward.")
      HC_RO(res::take_ops, snapshots) HC_RO(res::take_ops, clears) HC_RO(res::take_ops, cows);
  py::class_<res::prefetch>(m, "Prefetch",
                            "A storage prefetch: ready, its outcome and the storage hit.")
      HC_RO(res::prefetch, ready) HC_RO(res::prefetch, outcome)
          HC_RO(res::prefetch, storage_hit_tokens);
  py::class_<res::pin>(m, "Pin",
                       "A pin: its id (`pin`, 0 when nothing was cached to pin), the resumable "
                       "prefix it holds, the KV tokens matched, and the tokens of the prefix "
                       "loaded back from the host tier to hold it.")
      .def_readonly("pin", &res::pin::id) HC_RO(res::pin, pinned_len) HC_RO(res::pin, kv_matched)
          HC_RO(res::pin, loaded_tokens);
  py::class_<res::demote>(m, "Demote",
                          "What a demote did: the prompt's tokens found in the tree; the device "
                          "KV demoted to the host or evicted now, and the slots freed; the KV "
                          "demoted once the backups it queued are done; the KV that stays.")
      HC_RO(res::demote, matched_tokens) HC_RO(res::demote, demoted_tokens)
          HC_RO(res::demote, evicted_tokens) HC_RO(res::demote, slots_freed)
              HC_RO(res::demote, deferred_tokens) HC_RO(res::demote, kept_tokens);
}

void bind_vocabulary(py::module_& m) {
  py::class_<pool_state>(m, "PoolState", "Pool and tree occupancy after a command.")
      HC_RO(pool_state, kv_avail) HC_RO(pool_state, slots_avail) HC_RO(pool_state, rows_avail)
          HC_RO(pool_state, full_evictable) HC_RO(pool_state, full_protected)
              HC_RO(pool_state, mamba_evictable) HC_RO(pool_state, mamba_protected);
  py::class_<command_result>(m, "CommandResult",
                             "What every command reports, and the body of its kind (None for "
                             "the kinds that only succeed or fail, and for failures).")
      .def_property_readonly("ok", &command_result::ok)
      .def_property_readonly("code",
                             [](const command_result& r) { return std::string(to_string(r.code)); })
      .def_readonly("error", &command_result::error)
      .def_readonly("pools", &command_result::pools)
      .def_readonly("elapsed_ns", &command_result::elapsed_ns)
      .def_readonly("body", &command_result::body);
  py::class_<pool_info>(m, "PoolInfo",
                        "Where the instance's L1 pools are: POSIX shm names (device 'cpu') or "
                        "CUDA IPC memory handles (device 'cuda').") HC_RO(pool_info, kv_shm)
      HC_RO(pool_info, kv_bytes) HC_RO(pool_info, ssm_shm) HC_RO(pool_info, ssm_bytes)
          HC_RO(pool_info, kv_bytes_per_token) HC_RO(pool_info, ssm_slot_bytes) HC_RO(
              pool_info, instance_id) HC_RO(pool_info, device_ordinal) HC_RO(pool_info, rows_shm)
              HC_RO(pool_info, rows_bytes) HC_RO(pool_info, row_width) HC_RO(
                  pool_info, tokens_shm) HC_RO(pool_info, tokens_bytes)
                  .def_property_readonly(
                      "device", [](const pool_info& p) { return std::string(to_string(p.device)); })
                  .def_property_readonly(
                      "kv_ipc_handle",
                      [](const pool_info& p) { return py::bytes(p.kv_ipc_handle); })
                  .def_property_readonly(
                      "ssm_ipc_handle",
                      [](const pool_info& p) { return py::bytes(p.ssm_ipc_handle); })
                  .def_property_readonly(
                      "ready_event_ipc_handle",
                      [](const pool_info& p) { return py::bytes(p.ready_event_ipc_handle); })
                  .def_property_readonly("done_event_ipc_handle", [](const pool_info& p) {
                    return py::bytes(p.done_event_ipc_handle);
                  });
  py::class_<ping_reply>(m, "PingReply", "The node's protocol version and build.")
      HC_RO(ping_reply, protocol_version) HC_RO(ping_reply, node_version);
  py::enum_<strategy>(m, "Strategy")
      .value("NO_BUFFER", strategy::no_buffer)
      .value("EXTRA_BUFFER", strategy::extra_buffer)
      .value("EXTRA_BUFFER_LAZY", strategy::extra_buffer_lazy);
  py::class_<instance_spec>(m, "InstanceSpec", "What a session is opened for (README: Protocol).")
      .def(py::init<>())
      .def_readwrite("model_id", &instance_spec::model_id)
      .def_readwrite("tp_rank", &instance_spec::tp_rank)
      .def_readwrite("tp_size", &instance_spec::tp_size)
      .def_readwrite("page_size", &instance_spec::page_size)
      .def_readwrite("kv_tokens", &instance_spec::kv_tokens)
      .def_readwrite("kv_bytes_per_token", &instance_spec::kv_bytes_per_token)
      .def_readwrite("ssm_slots", &instance_spec::ssm_slots)
      .def_readwrite("ssm_slot_bytes", &instance_spec::ssm_slot_bytes)
      .def_readwrite("chunk_size", &instance_spec::chunk_size)
      .def_readwrite("strategy", &instance_spec::strat)
      .def_readwrite("track_interval", &instance_spec::track_interval)
      .def_readwrite("overlap", &instance_spec::overlap)
      .def_readwrite("request_rows", &instance_spec::request_rows)
      .def_readwrite("max_context_len", &instance_spec::max_context_len)
      .def_readwrite("shared_rows", &instance_spec::shared_rows)
      .def_readwrite("shared_tokens", &instance_spec::shared_tokens)
      .def_readwrite("slots_per_request", &instance_spec::slots_per_request)
      .def_readwrite("namespace", &instance_spec::ns)
      .def_readwrite("hicache_ratio", &instance_spec::hicache_ratio)
      .def_readwrite("hicache_bytes", &instance_spec::hicache_bytes)
      .def_readwrite("hicache_ssm_bytes", &instance_spec::hicache_ssm_bytes)
      .def_readwrite("prefetch_threshold", &instance_spec::prefetch_threshold)
      .def_readwrite("hicache_storage", &instance_spec::hicache_storage)
      .def_property(
          "device", [](const instance_spec& s) { return std::string(to_string(s.device)); },
          [](instance_spec& s, const std::string& name) {
            const auto d = parse_device_kind(name);
            if (!d) throw py::value_error("device must be 'cpu' or 'cuda', not '" + name + "'");
            s.device = *d;
          },
          "Where the L1 pools live: 'cpu' (shared memory) or 'cuda'. Default: 'cpu'")
      .def_readwrite("device_ordinal", &instance_spec::device_ordinal);
}

#undef HC_RO

}  // namespace
}  // namespace hc::python

PYBIND11_MODULE(_native, m) {
  using namespace hc;
  using namespace hc::python;
  m.doc() = "hybridcache's C++ client; use the `hybridcache` package, not this module.";
  m.attr("__version__") = std::string(hc::version());  // the release, as `hcctl --version`
  note_python_main_thread();
  auto error = py::register_exception<node_error>(m, "Error");
  error.attr("__doc__") = "A node call failed; the message starts with the node's error code.";
  py::register_exception<invalid_argument_error>(m, "InvalidArgument", error.ptr())
      .attr("__doc__") = "A parameter is out of range or malformed (the message names it).";
  py::register_exception<invalid_config_error>(m, "InvalidConfig", error.ptr()).attr("__doc__") =
      "An instance spec or option combination was refused.";
  py::register_exception<out_of_memory_error>(m, "OutOfMemory", error.ptr()).attr("__doc__") =
      "A pool cannot satisfy an allocation even after eviction.";
  py::register_exception<not_found_error>(m, "NotFound", error.ptr()).attr("__doc__") =
      "An unknown request, session or store, or one already closed.";
  py::register_exception<unavailable_error>(m, "Unavailable", error.ptr()).attr("__doc__") =
      "The node cannot be reached (not running, connection lost).";
  py::register_exception<timeout_error>(m, "Timeout", error.ptr()).attr("__doc__") =
      "No answer within the connection's timeout (the call was cancelled).";

  auto cmd_mod = m.def_submodule("cmd", "Commands, one class per kind (protocol v2).");
  bind_commands(cmd_mod);
  auto res_mod = m.def_submodule("res", "Result bodies, one class per kind (protocol v2).");
  bind_results(res_mod);
  bind_vocabulary(m);

  py::class_<cuda_ipc_mapping>(m, "CudaMapping",
                               "A CUDA instance's pool opened in this process "
                               "(cudaIpcOpenMemHandle); closed when the object goes.")
      .def_property_readonly("ptr",
                             [](const cuda_ipc_mapping& c) {
                               return reinterpret_cast<std::uintptr_t>(c.device_ptr());
                             })
      .def_property_readonly("size", &cuda_ipc_mapping::size);
  m.def(
      "map_cuda",
      [](std::uint32_t device, const py::bytes& handle, std::size_t size) {
        std::string h = handle;
        py::gil_scoped_release unlocked;
        return value_or_raise(cuda_ipc_mapping::open(device, h, size));
      },
      py::arg("device"), py::arg("handle"), py::arg("size"),
      "Opens a pool's CUDA IPC memory handle (PoolInfo.kv_ipc_handle / ssm_ipc_handle) on "
      "`device`; InvalidConfig without CUDA (build, driver or device).");

  py::class_<py_session>(m, "Session", "An open session (see hybridcache.Session).")
      .def("step", &py_session::step, py::arg("commands"))
      .def("begin_forward", &py_session::begin_forward, py::arg("batch"))
      .def("end_forward", &py_session::end_forward, py::arg("batch"))
      .def("pools", &py_session::pools)
      .def("read_slot", &py_session::read_slot, py::arg("slot"))
      .def("write_slot", &py_session::write_slot, py::arg("slot"), py::arg("data"))
      .def("read_kv_page", &py_session::read_kv_page, py::arg("page"))
      .def("write_kv_page", &py_session::write_kv_page, py::arg("page"), py::arg("data"))
      .def("close", &py_session::close)
      .def_property_readonly("closed", &py_session::closed);
  py::enum_<store_pool>(m, "StorePool", "Which pool of the Store a value belongs to.")
      .value("KV_PAGE", store_pool::kv_page)
      .value("SSM_STATE", store_pool::ssm_state);
  py::class_<store_sidecar>(m, "Sidecar",
                            "A sidecar pool of Store.exists and its hit policy (TRAILING_PAGES(n) "
                            "if trailing, else ALL_PAGES); the pool's key of page i is KV key i + "
                            "key_suffix.")
      .def(py::init([](store_pool pool, bool trailing, std::uint32_t n, std::string key_suffix) {
             return store_sidecar{pool, trailing, n, std::move(key_suffix)};
           }),
           py::arg("pool") = store_pool::ssm_state, py::arg("trailing") = true, py::arg("n") = 1,
           py::arg("key_suffix") = "")
      .def_readwrite("pool", &store_sidecar::which)
      .def_readwrite("trailing", &store_sidecar::trailing)
      .def_readwrite("n", &store_sidecar::n)
      .def_readwrite("key_suffix", &store_sidecar::key_suffix);
  py::class_<py_store>(m, "Store", "An open Store (see hybridcache.Store).")
      .def("exists", &py_store::exists, py::arg("kv_keys"), py::arg("sidecars"))
      .def("get", &py_store::get, py::arg("pool"), py::arg("entries"))
      .def("set", &py_store::set, py::arg("pool"), py::arg("entries"))
      .def("set_from", &py_store::set_from, py::arg("pool"), py::arg("entries"),
           py::arg("addresses"), py::arg("part_bytes"))
      .def("get_into", &py_store::get_into, py::arg("pool"), py::arg("entries"),
           py::arg("addresses"), py::arg("part_bytes"))
      .def("clear", &py_store::clear)
      .def("close", &py_store::close)
      .def_property_readonly("closed", &py_store::closed)
      .def_property_readonly("arena_name", &py_store::arena_name)
      .def_property_readonly("arena_bytes", &py_store::arena_bytes)
      .def_property_readonly("max_keys", &py_store::max_keys);
  m.def(
      "copy_in",
      [](py::buffer buf, const std::vector<std::uint64_t>& offsets,
         const std::vector<std::uint64_t>& addresses, const std::vector<std::uint64_t>& lengths) {
        copy_batch(std::move(buf), offsets, addresses, lengths, true);
      },
      py::arg("buffer"), py::arg("offsets"), py::arg("addresses"), py::arg("lengths"),
      "Copies lengths[i] bytes from addresses[i] to buffer[offsets[i]:] (GIL released).");
  m.def(
      "copy_out",
      [](py::buffer buf, const std::vector<std::uint64_t>& offsets,
         const std::vector<std::uint64_t>& addresses, const std::vector<std::uint64_t>& lengths) {
        copy_batch(std::move(buf), offsets, addresses, lengths, false);
      },
      py::arg("buffer"), py::arg("offsets"), py::arg("addresses"), py::arg("lengths"),
      "Copies buffer[offsets[i]:][:lengths[i]] to addresses[i] (GIL released).");
  py::class_<py_node>(m, "Node", "A connection to a node (see hybridcache.connect).")
      .def(py::init<const std::string&, const std::string&, double, bool>(), py::arg("address"),
           py::arg("token"), py::arg("timeout"), py::arg("io_thread") = true)
      .def("ping", &py_node::ping)
      .def("stats", &py_node::stats)
      .def("inspect", &py_node::inspect, py::arg("blocks") = false)
      .def("drain", &py_node::drain)
      .def("open", &py_node::open, py::arg("spec"))
      .def("store", &py_node::store, py::arg("identity"));
}
