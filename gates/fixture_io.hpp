// gates/fixture_io.hpp — between files and kernels: reads a fixture's (or any
// safetensors file's) inputs and cotangents into the f32 buffers a backend
// takes, validating names, shapes and values; and writes a backend's outputs
// as a candidate file (DESIGN.md section 4). Kernels never see a file.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/safetensors.hpp"
#include "kernels/backend.hpp"
#include "oracle/op.hpp"
#include "oracle/problem.hpp"

namespace deltaproof::gates {

struct KernelJob {
  kernels::KernelShape shape;
  kernels::Buffers inputs;  // f32, cast from the file's values
};

// Derives the op (metadata "op", else from the tensors present), B T H K from
// q, V from v, scale (metadata "scale", else K^-1/2) and the chunk (`chunk` if
// > 0, else metadata "chunk", else 64). Throws InputError naming `source`, the
// tensor and the problem: a missing tensor, a shape that disagrees with the
// others, a NaN or inf.
KernelJob job_from_file(const SafetensorsFile& file, const std::string& source,
                        kernels::Phase phase, int chunk);

// o, ht and the gradients as F32 tensors in FLA layout, named as in fixtures,
// with the backend, phase, chunk and execution record in the metadata.
SafetensorsFile candidate_file(const kernels::KernelShape& shape, kernels::Phase phase,
                               const kernels::Buffers& outputs,
                               const kernels::ExecutionRecord& record, const std::string& backend,
                               const std::string& fixture_source);

// The kernel's view of a fixture spec: op, B T H K V, chunk and scale.
kernels::KernelShape kernel_shape(const oracle::FixtureSpec& spec);

// A drawn problem's tensors (inputs and cotangents) as a kernel reads them, in f32.
kernels::Buffers kernel_inputs(const oracle::Problem& problem);

// The FLA shape of a named tensor.
Shape tensor_shape(const kernels::KernelShape& shape, const std::string& name);

}  // namespace deltaproof::gates
