// The process-wide state of libgpudoc_slice.so inside the job: the real driver functions, the
// slice's shared accounting, this process's allocations (pointer or handle -> bytes), and logging
// that says each thing once. Internal to the library.
//
//   auto real = inject::real<cu::cuMemAlloc_v2_t>(inject::Hook::cuMemAlloc_v2);
//   if (!inject::reserve(bytes)) return cu::kErrorOutOfMemory;
//   ...
//
// Nothing here throws, exits or aborts. Thread-safety: every function may be called from any
// thread; fork() is handled (the child starts with no allocations and its own slot).
#pragma once

#include <cstdint>
#include <optional>

#include "slice/inject/hook_table.hpp"

namespace gpudoc::slice::inject {

// The driver's function behind `hook` (nullptr when libcuda.so.1 lacks it). Loads the driver on
// first use.
void* real_function(Hook hook);
template <class Fn>
Fn real(Hook hook) {
  return reinterpret_cast<Fn>(real_function(hook));
}
// Remembers the driver's address for a variant found only through cuGetProcAddress.
void note_real_function(int index, void* fn);

// The slice's memory cap in bytes; 0 when none is enforced (no slice state given).
std::uint64_t memory_cap();
// Charges `bytes` to this process when the slice stays within its cap; false otherwise.
bool reserve(std::uint64_t bytes);
void charge_unchecked(std::uint64_t bytes);
void release(std::uint64_t bytes);
// Bytes the whole slice holds.
std::uint64_t slice_used();
// Registers this process with the slice (cuInit), so `slice list` shows it before it allocates.
void register_self();

enum class Kind { kPointer, kHandle };
// Remembers that `key` holds `bytes` (charged already). false when it could not be remembered
// (out of host memory): the caller gives the charge back.
bool track(Kind kind, std::uint64_t key, std::uint64_t bytes);
// Forgets `key` and returns its bytes; nullopt when it was not allocated through the slice.
std::optional<std::uint64_t> untrack(Kind kind, std::uint64_t key);

// Compute cap: waits, when the slice has one (and no MPS), until the launch gate opens.
void before_launch();
// Copy-rate cap (--pcie): counts a host<->device copy of `bytes` against the slice's rate and
// sleeps this thread while the slice's copies run ahead of it. No-op without the cap.
void before_copy(std::uint64_t bytes);
// Whether the copy-rate cap is enforced: the unified copies ask the driver for their pointers'
// memory types only then.
bool copy_cap_on();
// Whether the driver takes `ptr` for host memory: pinned or registered, or not a CUDA pointer at
// all (pageable memory).
bool is_host_pointer(std::uint64_t ptr);
// CLOCK_MONOTONIC in nanoseconds: the same clock in every process of the slice.
std::int64_t monotonic_ns();
// Sleeps this thread for `ns` nanoseconds (whole, through signals); nothing when ns <= 0.
void sleep_ns(std::int64_t ns);

// Whether `pid` is one of the slice's processes.
bool slice_has_process(int pid);

enum class Message { kNoDriver, kBadState, kRefused, kTrackingFailed, kUnknownVariant, kNoSlot, kNoNvml, kCount };
// Writes "gpudoc slice: TEXT" to stderr the first time `id` happens in this process.
void log_once(Message id, const char* text);

// dlsym as glibc defines it (never our own).
using DlsymFn = void* (*)(void*, const char*);
DlsymFn real_dlsym();

}  // namespace gpudoc::slice::inject
