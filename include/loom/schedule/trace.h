// Schedule traces: every primitive applied to a schedule, recorded as a replayable step.
//
// A Schedule records each primitive that succeeds on it (Stage::split … Schedule::rfactor) as
// a Step that names its stage and iteration variables by position, so that the same steps
// applied to a fresh create_schedule of the same computation (rebuilt in another process,
// with other variable names) make the same schedule. Steps have a JSON form (tuning records
// carry the steps of auto-scheduled configs) and a readable one (`loom show`).
#pragma once
#include <string>
#include <vector>

#include "loom/schedule/schedule.h"

namespace loom::schedule {

/// The primitives applied to `s` since create_schedule, in order (Schedule::copy copies them).
const std::vector<Step>& trace(const Schedule& s);

/// One line per step, e.g. "C@3.split(i@0, factor=8)" or "B@1.compute_at(C@3, i.outer@4)".
std::string to_string(const Step& step);
std::string to_string(const std::vector<Step>& steps);

/// The JSON array of `steps` (one object per step: {"p": kind, "stage": "C@3", …}). Throws
/// loom::Error naming the step for one that is not replayable.
std::string steps_to_json(const std::vector<Step>& steps);
/// Parses steps_to_json's output; throws loom::Error naming the step and field that is
/// missing or malformed.
std::vector<Step> steps_from_json(const std::string& json);

/// Applies `steps` to `s` (normally a fresh create_schedule of the computation the steps were
/// recorded on): each through the public primitive, so `trace(s)` grows by the same steps.
/// Throws loom::Error naming the step (its position and text) when a reference does not
/// resolve (a position out of range, a stage of another name), a step is not replayable, or
/// the primitive rejects it.
void apply_steps(Schedule& s, const std::vector<Step>& steps);

}  // namespace loom::schedule
