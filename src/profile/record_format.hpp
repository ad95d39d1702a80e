// gpudoc::profile record format — the lines the injection library (inside the job) writes and the
// analysis (outside) reads; docs/profile.md describes every field.
//
// One record per line, fields separated by TAB, the first field a one-letter kind:
//
//   H  gpudoc-profile  1  PID  CUPTI_VERSION               header, first line of every file
//   K  START END DEV STREAM CORR GX GY GZ BX BY BZ GRAPH NAME  a kernel (NAME mangled, escaped)
//   M  START END DEV STREAM CORR COPYKIND SRCKIND DSTKIND BYTES GRAPH   a memcpy
//   S  START END DEV STREAM CORR BYTES MEMKIND GRAPH          a memset
//   R  START END CBID CORR TID      a runtime API call;  D: the same for a driver API call
//   C  R|D CBID NAME                the name of an API callback id (written once per id)
//   Y  START END TYPE STREAM CORR   a synchronization (CUPTI's type: 1 event, 2 stream wait, 3 stream, 4 context)
//   G  START END DEV STREAM GRAPH CORR   one launch of a CUDA graph, as a whole
//   N  FLAGS ID TIMESTAMP TID NAME DOMAIN   an NVTX marker (flags 2 start, 4 end, 1 instantaneous)
//   X  DROPPED|LIMIT COUNT          records dropped: CUPTI's buffers were full, or the file reached its bound
//   W  MESSAGE                      a problem the library met (it logs it once and goes on)
//   O  TIMESTAMP                    tracing (re)started: a sampling window opens (format 2)
//   F  TIMESTAMP                    tracing stopped until the next O line (format 2)
//   E  TIMESTAMP DROPPED            written at a clean exit; a file without it was cut short
//   T  TIMESTAMP MONOTONIC          CUPTI's clock and the host's CLOCK_MONOTONIC read together (format 3)
//   P  DEV PCI_BUS_ID               the PCI bus id of a CUDA device of the process (format 3)
//   J  MONOTONIC PCI_BUS_ID MJ      a GPU's NVML total-energy counter (millijoules) read at CLOCK_MONOTONIC
//                                   MONOTONIC by `gpudoc profile`, which appends them (format 3)
//   U  MESSAGE                      why `gpudoc profile` read no energy counter (format 3)
//
// Times are CUPTI timestamps in nanoseconds, but MONOTONIC: CLOCK_MONOTONIC nanoseconds, which the
// T lines map to CUPTI's clock (profile/energy.hpp). Text fields are escaped (escape_field) so a name can
// never break a line or a field; a last line without its newline (a job killed mid-write) is
// skipped by the reader. Header-only and free of gpudoc's other libraries: the injection library
// includes it.
#pragma once

#include <string>
#include <string_view>

namespace gpudoc::profile {

inline constexpr int kRecordFormatVersion = 3;  // 2: O and F lines (sampling windows); 3: T, P, J, U (energy)
inline constexpr std::string_view kRecordMagic = "gpudoc-profile";

// Environment the parent (`gpudoc profile`) hands the job.
inline constexpr const char* kEnvOutputDir = "GPUDOC_PROFILE_DIR";         // private folder, made by the parent
inline constexpr const char* kEnvCuptiPath = "GPUDOC_PROFILE_CUPTI";       // libcupti files, ':'-separated
inline constexpr const char* kEnvBufferMiB = "GPUDOC_PROFILE_BUFFER_MIB";  // bound on CUPTI buffers
inline constexpr const char* kEnvMaxFileMiB = "GPUDOC_PROFILE_MAX_MIB";    // bound on the records file
inline constexpr const char* kEnvKinds = "GPUDOC_PROFILE_KINDS";           // what to record (RecordedKinds)
inline constexpr const char* kEnvSample = "GPUDOC_PROFILE_SAMPLE";         // "ON_MS:OFF_MS" (SampleWindows)

// Sampling (gpudoc profile --sample ON:OFF): kernels, copies and API calls are traced for ON
// milliseconds, then not for OFF, over and over, from the program's first CUDA call; NVTX markers
// stay on throughout, so steps between the windows are timed too and the profile can say what
// tracing costs the program. Both at least 1 ms.
struct SampleWindows {
  unsigned on_ms = 0, off_ms = 0;
  // "ON_MS:OFF_MS", whole milliseconds; false for anything else.
  static bool parse(const char* text, SampleWindows& out) {
    if (text == nullptr) return false;
    const std::string_view t(text);
    const std::size_t colon = t.find(':');
    if (colon == std::string_view::npos) return false;
    auto number = [](std::string_view v, unsigned& n) {
      if (v.empty() || v.size() > 9) return false;
      n = 0;
      for (char c : v) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + static_cast<unsigned>(c - '0');
      }
      return n > 0;
    };
    return number(t.substr(0, colon), out.on_ms) && number(t.substr(colon + 1), out.off_ms);
  }
};

// What the injection library asks CUPTI to record besides kernels (always recorded). The default
// leaves out CUPTI's SYNCHRONIZATION records: the analysis finds syncs among the API calls, and on an
// H200 those records cost a host-bound PyTorch training step about a quarter of its time
// (docs/results/profile.md). GPUDOC_PROFILE_KINDS, a comma-separated list of the names below,
// replaces the default — for measuring what each kind costs, or recording less.
struct RecordedKinds {
  bool memcpy = true, memset = true, graph = true, marker = true, runtime = true, driver = true, sync = false;

  // `list` empty or null: the default. Unknown names are ignored.
  static RecordedKinds parse(const char* list) {
    if (list == nullptr || *list == '\0') return {};
    RecordedKinds k{false, false, false, false, false, false, false};
    std::string_view rest(list);
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view name = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      bool* flag = name == "memcpy"    ? &k.memcpy
                   : name == "memset"  ? &k.memset
                   : name == "graph"   ? &k.graph
                   : name == "marker"  ? &k.marker
                   : name == "runtime" ? &k.runtime
                   : name == "driver"  ? &k.driver
                   : name == "sync"    ? &k.sync
                                       : nullptr;
      if (flag != nullptr) *flag = true;
    }
    return k;
  }
};

// Backslash, TAB, newline and carriage return become \\, \t, \n, \r.
inline void append_escaped(std::string& out, std::string_view s) {
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
}

inline std::string unescape_field(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char n = s[++i];
    out += n == 't' ? '\t' : n == 'n' ? '\n' : n == 'r' ? '\r' : n;
  }
  return out;
}

}  // namespace gpudoc::profile
