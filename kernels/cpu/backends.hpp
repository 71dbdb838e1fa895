// kernels/cpu/backends.hpp — the two host backends: cpu-chunk (the chunked WY
// algorithm of chunk.hpp) and cpu-recurrent (the token-by-token recurrence and
// its reverse sweep, in f32: the definition's own template, core/recurrence.hpp).
#pragma once

#include "core/gdn2_form.hpp"
#include "kernels/backend.hpp"
#include "kernels/cpu/chunk.hpp"

namespace deltaproof::kernels::cpu {

const Backend& chunk_backend();
const Backend& recurrent_backend();

// One sequence of FLA-layout buffers in gdn2 form (kda's beta broadcast into
// B and W, gdn's g over K), `rows` tokens long: q and k from its key head,
// the rest from its value head (core/op.hpp: SequenceRef). Rows past its
// length are read from where a kernel that ignored the length would read them
// (the flat buffer past the sequence, the next packed sequence's tokens,
// wrapping at its end) — only the partial-chunk fault asks for that. The
// gdn2-form gates are made once per run (core/gdn2_form.hpp: gdn2_gates); the
// four-argument form makes them itself.
HeadSequence gather_head(const KernelShape& s, const Buffers& in, const Gdn2Gates<float>& gates,
                         const SequenceRef& r, int rows);
HeadSequence gather_head(const KernelShape& s, const Buffers& in, const SequenceRef& r, int rows);
MatF gather_tokens(const KernelShape& s, const std::vector<float>& buffer, int width, int columns,
                   const SequenceRef& r, bool key_side, int rows);
MatF gather_state(const KernelShape& s, const std::vector<float>& buffer, const SequenceRef& r);

// Writes a sequence's rows back into a tensor of `width` channels (adds them
// with `add`: a grouped key head's dq and dk).
void scatter_tokens(const KernelShape& s, const MatF& m, int width, const SequenceRef& r,
                    bool key_side, std::vector<float>& out, bool add = false);
void scatter_state(const KernelShape& s, const MatF& m, const SequenceRef& r,
                   std::vector<float>& out);

}  // namespace deltaproof::kernels::cpu
