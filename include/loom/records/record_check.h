// A process-wide check that read_log applies to every record it parses, for what the
// records layer cannot judge by itself (whether a config index fits its template's space).
#pragma once
#include <functional>
#include <string>

#include "loom/records/record.h"

namespace loom::records {

/// Returns why `record` must be skipped, or "" to keep it.
using RecordCheck = std::function<std::string(const Record& record)>;

/// Installs `check` (an empty function removes it). read_log skips and reports the records
/// it rejects as it does malformed lines, naming the file and line. Not thread-safe against
/// concurrent readers: set it once, at start-up. tuner::install_record_check (build_best.h)
/// installs the check the `loom` CLI uses: a record must name a config of its template's space.
void set_record_check(RecordCheck check);

}  // namespace loom::records
