#include "actors/node/actor_watch.hpp"

#include <caf/abstract_actor.hpp>
#include <caf/actor_control_block.hpp>
#include <caf/error.hpp>
#include <caf/exit_reason.hpp>

#include <utility>

namespace hc {

void watch_actor(const caf::strong_actor_ptr& actor, std::string name,
                 actor_failure_handler on_failure) {
  if (!actor || !on_failure) return;
  actor->get()->attach_functor(
      [name = std::move(name), on_failure = std::move(on_failure)](const caf::error& reason) {
        if (!reason || reason == caf::make_error(caf::exit_reason::user_shutdown)) return;
        on_failure(name + " failed: " + caf::to_string(reason));
      });
}

}  // namespace hc
