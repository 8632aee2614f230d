#include "actors/node/scheduler_actor.hpp"

#include <string>

#include "actors/node/messages.hpp"
#include "actors/scheduler/command_executor.hpp"

namespace hc {

caf::behavior scheduler_actor(caf::event_based_actor* self, session_id session,
                              scheduler_limits limits, caf::actor radix_cache,
                              caf::actor forward_stream) {
  return {
      [=](msg::step_atom, const msg::step_ptr& job) {
        if (job->cmds.size() > limits.max_step_commands) {
          job->err = {errc::invalid_argument, "step has " + std::to_string(job->cmds.size()) +
                                                  " commands, more than the limit " +
                                                  std::to_string(limits.max_step_commands)};
          return job->complete();
        }
        for (std::size_t i = 0; i < job->cmds.size(); ++i)
          if (status s = validate_command(job->cmds[i], limits.max_command_tokens); !s) {
            job->err = {s.err().code, "command " + std::to_string(i) + ": " + s.err().message};
            return job->complete();
          }
        self->send(radix_cache, msg::step_atom::value, job);
      },
      [=](msg::fence_atom, const msg::fence_ptr& job) {
        self->send(forward_stream, msg::fence_atom::value, job);
      },
      [=](msg::bytes_atom, const msg::bytes_ptr& job) {
        self->send(forward_stream, msg::bytes_atom::value, job);
      },
      [=](msg::close_atom, const msg::close_ptr& job) {
        self->send(forward_stream, msg::detach_atom::value, session);
        self->send(radix_cache, msg::detach_atom::value, job);  // completes the job
        self->quit();
      },
  };
}

}  // namespace hc
