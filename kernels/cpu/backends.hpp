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

// One (batch, head) of FLA-layout buffers in gdn2 form (kda's beta broadcast
// into B and W, gdn's g over K), `rows` tokens long. Rows past T are read from
// where a kernel that ignored T would read them (the flat buffer past the
// sequence, wrapping at its end) — only the partial-chunk fault asks for that.
// The gdn2-form gates are made once per run (core/gdn2_form.hpp: gdn2_gates);
// the five-argument form makes them itself.
HeadSequence gather_head(const KernelShape& s, const Buffers& in, const Gdn2Gates<float>& gates,
                         int b, int h, int rows);
HeadSequence gather_head(const KernelShape& s, const Buffers& in, int b, int h, int rows);
MatF gather_tokens(const KernelShape& s, const std::vector<float>& buffer, int width, int columns,
                   int b, int h, int rows);
MatF gather_state(const KernelShape& s, const std::vector<float>& buffer, int b, int h);

// Writes one head's T rows back into a tensor of `width` channels.
void scatter_tokens(const KernelShape& s, const MatF& m, int width, int b, int h,
                    std::vector<float>& out);
void scatter_state(const KernelShape& s, const MatF& m, int b, int h, std::vector<float>& out);

}  // namespace deltaproof::kernels::cpu
