#pragma once
// Conversions between the wire types (schema/hybridcache.capnp) and the core's types.
// Only schema/ sees generated Cap'n Proto types (architecture.md §6), and hcbench's wire
// benchmark (tools/hcbench/wire_bench.cpp), which times these conversions.

#include <span>
#include <string>
#include <vector>

#include "actors/common/command.hpp"
#include "actors/common/instance_spec.hpp"
#include "actors/common/pool_info.hpp"
#include "actors/common/status.hpp"
#include "hybridcache.capnp.h"

namespace hc::wire_convert {

/// A string for a Text field, whole: Cap'n Proto's conversion from std::string stops at
/// the first NUL, so "a\0b" and "a" would reach the node as one key, model or namespace.
inline capnp::Text::Reader text(const std::string& s) {
  return {s.data(), s.size()};  // std::string keeps the terminating NUL Text needs
}
/// A Text field as a string, whole (cStr() stops at an embedded NUL).
inline std::string text(capnp::Text::Reader r) {
  return {r.begin(), r.size()};
}

wire::ErrorCode code_to_wire(errc c) noexcept;
errc code_from_wire(wire::ErrorCode c) noexcept;
void put_error(wire::Error::Builder b, const error& e);
/// ok when code == ok; the message otherwise.
error get_error(wire::Error::Reader r);

/// invalid_config naming the field for a value the wire's field cannot carry (a UInt32
/// field given more than 2^32 - 1): refused, never truncated. b is then partly written.
status put_spec(wire::InstanceSpec::Builder b, const instance_spec& s);
/// invalid_config naming the field for a value out of range of the core's types.
result<instance_spec> get_spec(wire::InstanceSpec::Reader r);

void put_command(wire::Command::Builder b, const command& c);
/// invalid_argument naming the kind's number for a kind this node does not know.
result<command> get_command(wire::Command::Reader r);

void put_result(wire::CommandResult::Builder b, const command_result& r);
/// A body of a kind this side does not know reads as a parse_error naming its number.
command_result get_result(wire::CommandResult::Reader r);

/// Upper bounds of the words a step's commands and its results take in a message, for the
/// RPC's size hint: a message whose first segment holds it all is one segment, which its
/// reader walks without the segment lookups (a lock each) that a far pointer costs —
/// BENCHMARKS.md §4.14. An estimate short of the truth only costs a second segment.
capnp::MessageSize step_request_size(std::span<const command> cmds);
capnp::MessageSize step_results_size(std::span<const command_result> results);

void put_pool_info(wire::PoolInfo::Builder b, const pool_info& p);
pool_info get_pool_info(wire::PoolInfo::Reader r);

}  // namespace hc::wire_convert
