// Chain Cache bookkeeping: which request may continue which retained sequence state. Agent turns
// extend one history; an eviction method's compacted KV cannot be matched by a prefix cache, so a
// request that names a chain continues the sequence state the chain's last turn left behind and
// prefills only its new suffix.
//
// The state itself (retained KV, positions, scores) stays in the method's cache manager under
// the owner's SeqId; this class only decides. A record:
//
//   id -> { owner SeqId, fingerprint, processed tokens + their digest, ACTIVE | IDLE, last use,
//           blocks held while idle }
//
//   begin(id, prompt)   unknown          -> created     (ACTIVE, the new sequence owns it)
//                       IDLE, matches    -> resumed     (ACTIVE, continue the owner's state)
//                       IDLE, mismatch   -> invalidated (old state released, run from scratch)
//                       ACTIVE           -> busy error  (the request is refused)
//                       reclaimed before -> gone error  (the request is refused)
//   park(owner)         ACTIVE -> IDLE (the owner finished normally; its state stays)
//   invalidate(owner)   the owner was cancelled or failed: the record goes
//   mark_lost(owner)    the owner was preempted: busy until it ends, then the record goes
//   reclaim_lru()       the least recently used IDLE record goes; its id is remembered as gone
//
// A prompt matches when it has the same fingerprint (model, dtype, method, knobs, salt), is
// longer than the processed tokens, and its first `processed` tokens hash to the digest (the
// last sampled token of a turn has no KV, so it is not processed).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/expected.h"
#include "kv/paged_kv_store.h"

namespace se {

enum class ChainStatus : uint8_t { kCreated, kResumed, kInvalidated };

std::string_view chain_status_name(ChainStatus status);

struct ChainLimits {
    int32_t max_idle_chains = -1;       // most IDLE chains kept (-1: no count limit)
    double max_idle_pool_fraction = 1;  // most of the pool IDLE chains hold together, in (0, 1]
};

// What begin() decided.
struct ChainStart {
    ChainStatus status = ChainStatus::kCreated;
    SeqId seq = 0;                 // the sequence id the request runs under
    int32_t reused_tokens = 0;     // tokens whose state it continues (resumed only)
    std::optional<SeqId> release;  // an old state the caller must free (invalidated only)
};

struct ChainCacheStats {
    int32_t num_active = 0;
    int32_t num_idle = 0;
    int64_t idle_blocks = 0;
    int64_t num_resumed = 0;
    int64_t num_invalidated = 0;
    int64_t num_reclaimed = 0;
};

// An IDLE chain, as the state's other users (pruning) see it.
struct IdleChain {
    SeqId owner = 0;
    int32_t processed = 0;  // tokens the state covers
};

class ChainCache {
  public:
    ChainCache(ChainLimits limits, int64_t pool_blocks);

    // Starts a request on chain `id` that would run as `new_seq` if it does not resume.
    // Errors: failed_precondition when the chain is busy (ACTIVE), gone when it was reclaimed.
    Expected<ChainStart> begin(const std::string& id, uint64_t fingerprint,
                               std::span<const int32_t> prompt, SeqId new_seq);

    // Whether `seq` is the ACTIVE owner of chain `id`.
    bool owns(const std::string& id, SeqId seq) const;

    // The ACTIVE owner finished normally after processing `processed` (its first tokens); its
    // state, holding `blocks` blocks, stays. `now` orders reclamation (ties: lower id first).
    // Returns the owners of chains reclaimed to stay within the limits (their state must be
    // freed); possibly the chain just parked, when it alone is over them.
    // `transcript` is the whole turn (prompt and every generated token), kept for transcript().
    std::vector<SeqId> park(const std::string& id, std::span<const int32_t> processed,
                            int64_t blocks, int64_t now, std::span<const int32_t> transcript = {});

    // The owner's state is gone (cancelled or failed): forgets the record; a later request on
    // `id` starts a new chain.
    void invalidate(const std::string& id);

    // The running owner's state was dropped (preempted: it recomputes from scratch). The chain
    // stays busy while the owner runs, then is forgotten instead of parked.
    void mark_lost(const std::string& id);
    bool lost(const std::string& id) const;

    // Reclaims the least recently used IDLE chain; returns its owner (whose state the caller
    // frees) or nullopt when none is idle.
    std::optional<SeqId> reclaim_lru();

    // Forgets an IDLE chain on request (its id is not remembered as gone); returns its owner.
    // Errors: not_found for an unknown id, failed_precondition for an ACTIVE chain.
    Expected<SeqId> drop(const std::string& id);

    // Chain `id` if it is IDLE and its processed tokens are the first tokens of `history`.
    // Errors: not_found (unknown), gone (reclaimed), failed_precondition (busy),
    // invalid_argument (`history` does not begin with what the chain processed).
    Expected<IdleChain> idle(const std::string& id, std::span<const int32_t> history) const;
    // The last turn of IDLE chain `id` as token ids (its prompt and every token it generated):
    // what a client appends its next messages to. Errors as idle().
    Expected<std::vector<int32_t>> transcript(const std::string& id) const;
    // An IDLE chain's state changed size (pruned): it now holds `blocks` blocks.
    void resize(const std::string& id, int64_t blocks);

    // Owners of every IDLE chain (their blocks can be reclaimed under pressure).
    std::vector<SeqId> idle_owners() const;

    ChainCacheStats stats() const;

  private:
    enum class State : uint8_t { kActive, kIdle };
    struct Digest {
        uint64_t low = 0;
        uint64_t high = 0;
        bool operator==(const Digest&) const = default;
    };
    struct Record {
        SeqId owner = 0;
        uint64_t fingerprint = 0;
        int32_t processed = 0;
        Digest digest;
        std::vector<int32_t> transcript;
        State state = State::kActive;
        int64_t last_use = 0;
        int64_t blocks = 0;
        bool lost = false;
    };

    static Digest digest_of(std::span<const int32_t> tokens);
    Expected<const Record*> idle_record(const std::string& id) const;
    bool over_limits() const;
    void remember_gone(const std::string& id);

    ChainLimits limits_;
    int64_t pool_blocks_ = 0;
    std::map<std::string, Record> records_;
    std::unordered_set<std::string> gone_;
    std::deque<std::string> gone_order_;  // oldest first; the set is bounded
    int64_t num_resumed_ = 0;
    int64_t num_invalidated_ = 0;
    int64_t num_reclaimed_ = 0;
};

}  // namespace se
