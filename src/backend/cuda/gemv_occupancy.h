// How many GEMV CTAs (gemv.cu) one SM may hold, for a launch of few tiles, and how much of the
// SM's memory the CTAs of the 9..16-row kernels leave to L1.
//
// A launch of at most two waves (the o and down projections of an 8B model: 256 tiles on 132
// SMs) is one wave whose balance the hardware decides: under programmatic dependent launch the
// CTAs are placed while the previous kernel still runs, into whatever slots free first, so one SM
// can take three while another takes none, and the launch lasts as long as the fullest SM
// (measured on the H200: down 39 us launched early, 32 us launched plainly). Asking each CTA for
// enough shared memory that no more than ceil(tiles / SMs) fit on one SM makes every placement
// even: with c per SM at most, 256 tiles on 132 SMs leave at most 8 SMs with fewer than c = 2.
//
// The arithmetic is plain C++ so that the host tests check it; gemv_device() reads the device's
// numbers once, at start-up.
#pragma once

#include <cstdint>

namespace se::cuda {

struct SmSharedMemory {
    int64_t per_sm = 0;            // cudaDevAttrMaxSharedMemoryPerMultiprocessor
    int64_t reserved_per_cta = 0;  // cudaDevAttrReservedSharedMemoryPerBlock
    int64_t max_per_cta = 0;       // cudaDevAttrMaxSharedMemoryPerBlockOptin
};

// The most CTAs one SM should hold for `tiles` CTAs on `num_sms` SMs; 0 where the launch has
// enough waves (more than `max_capped`) that the hardware's own placement balances it.
inline int64_t gemv_ctas_per_sm_cap(int64_t tiles, int64_t num_sms, int64_t max_capped) {
    if (tiles <= 0 || num_sms <= 0) return 0;
    const int64_t waves = (tiles + num_sms - 1) / num_sms;
    return waves <= max_capped ? waves : 0;
}

// Dynamic shared memory per CTA that lets `cap` CTAs, each with `static_bytes` of its own, fit on
// one SM and not cap + 1; 0 where cap is 0 or no request can do it. The footprint is the smallest
// that keeps cap + 1 out (plus kSlack for the allocation granularity), so that the SM's L1 keeps
// the rest of the unified memory.
inline int64_t gemv_dynamic_smem(int64_t cap, int64_t static_bytes, const SmSharedMemory& sm) {
    constexpr int64_t kSlack = 1024;
    if (cap <= 0) return 0;
    const int64_t footprint = sm.per_sm / (cap + 1) + kSlack;
    const int64_t dynamic = footprint - static_bytes - sm.reserved_per_cta;
    if (dynamic <= 0 || cap * footprint > sm.per_sm) return 0;
    if (dynamic + static_bytes > sm.max_per_cta) return 0;
    return dynamic;
}

// The preferred shared-memory carveout, in percent of the SM's shared memory, that holds `ctas`
// CTAs of `static_bytes` each (and the part reserved per CTA): the smallest such, so that L1 keeps
// the rest. The driver rounds it up to a size the SM supports (32 KB for 2 or 3 of the GEMV's
// 8 KB at 9..16 rows on the H200).
inline int gemv_carveout_percent(int64_t ctas, int64_t static_bytes, const SmSharedMemory& sm) {
    if (ctas <= 0 || sm.per_sm <= 0) return 0;
    const int64_t need = ctas * (static_bytes + sm.reserved_per_cta);
    const int64_t percent = (need * 100 + sm.per_sm - 1) / sm.per_sm;
    return percent < 100 ? static_cast<int>(percent) : 100;
}

}  // namespace se::cuda
