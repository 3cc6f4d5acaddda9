"""GPU-hours and wall time of a sweep: the throughput model `sweep plan` and bench/grid_projection.py share.

Pure arithmetic over stated assumptions, none measured by this engine (reference/performance-notes.md, "Facts for a
GPU-hour model of the grid"; check on a real GPU when one is available):

1. Decode (one ~9B model per GPU, decode-bound): T(c) = T1 * c / (1 + alpha * (c - 1)) generated tokens/s at c
   sequences in flight. Calibrated on A100 40GB to a published vLLM concurrency sweep of Llama-3.1-8B-Instruct
   (BF16): ~75 tok/s at c = 1 and a 6.6x gain at c = 8 -> T1 = 75, alpha = 0.0303 (T(32) ~ 1,240, T(64) ~ 1,650).
   Qwen3.5-9B is taken as the same size class.
2. Prefill at 8,000 tokens/s per A100 (compute-bound; not batched better in either layout).
3. Other GPUs scale T1 and prefill by one factor, alpha unchanged: H100 = 2x A100 (the notes' stated ratio);
   H200 = 1.43x H100, the ratio of memory bandwidth (4.8 / 3.35 TB/s, decode being bandwidth-bound): an assumption,
   the notes give no H200 figure. (The notes' ~12,500 tok/s for an H100 at saturation is far past c = 32 and is not
   used.)
4. Tokens per call: engine/sweep/cost.py (1,500 prompt + 400 generated for every call).
5. The sweep's layout: jobs packed on shared endpoints (one GPU each) at c = `concurrency` per GPU, busy `busy` of
   the time; GPU-hours count the idle share (what is paid for). Wall time = GPU-hours / endpoints: the jobs keep
   every endpoint at its limit, and no job's own sequential steps (an optimizer's iterations) are the bound.
6. The reference layout, for comparison: one process per job, one request in flight (c = 1, busy 1), every job
   running its own seed-bundle evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.sweep.cost import COMPLETION_TOKENS_PER_CALL, PROMPT_TOKENS_PER_CALL, Cost


@dataclass(frozen=True)
class GpuProfile:
    name: str
    t1: float  # generated tokens/s at one sequence in flight
    alpha: float  # saturation of the decode curve
    prefill_tps: float  # prompt tokens/s
    basis: str  # where the figures come from


A100 = GpuProfile("a100", 75.0, 0.0303, 8000.0, "calibrated: published vLLM sweep, Llama-3.1-8B on A100 40GB")
H100_VS_A100 = 2.0  # stated in the performance notes
H200_VS_H100 = 4.8 / 3.35  # assumed: memory-bandwidth ratio (no H200 throughput figure in the notes)


def scaled(base: GpuProfile, name: str, factor: float, basis: str) -> GpuProfile:
    return GpuProfile(name, base.t1 * factor, base.alpha, base.prefill_tps * factor, basis)


GPUS = {"a100": A100,
        "h100": scaled(A100, "h100", H100_VS_A100, "assumed: 2x A100, the ratio the performance notes state"),
        "h200": scaled(A100, "h200", H100_VS_A100 * H200_VS_H100, "assumed: 1.43x H100, the memory-bandwidth "
                       "ratio 4.8 / 3.35 TB/s; the notes give no H200 figure")}


def throughput(c: float, gpu: GpuProfile = A100) -> float:
    """Generated tokens/s of one GPU at c sequences in flight (assumption 1)."""
    return gpu.t1 * c / (1 + gpu.alpha * (c - 1))


def gpu_seconds(calls: float, concurrency: float, busy: float = 1.0, gpu: GpuProfile = A100) -> float:
    """GPU-seconds of `calls` model calls at `concurrency` per GPU, busy `busy` of the time (assumptions 1-5)."""
    decode = calls * COMPLETION_TOKENS_PER_CALL / (throughput(concurrency, gpu) * busy)
    return decode + calls * PROMPT_TOKENS_PER_CALL / gpu.prefill_tps


@dataclass(frozen=True)
class Projection:
    gpu: str
    endpoints: int
    concurrency: int
    busy: float
    model_calls: int  # this sweep's (shared seed-bundle evaluations counted once)
    reference_calls: int  # the reference layout's (every job its own)
    tokens_per_s: float  # one GPU at `concurrency`
    gpu_hours: float
    wall_hours: float
    reference_gpu_hours: float


def project(cost: Cost, gpu: GpuProfile, endpoints: int, concurrency: int, busy: float) -> Projection:
    """GPU-hours and wall time of a plan's rough cost on `endpoints` GPUs (one endpoint each)."""
    if endpoints < 1 or concurrency < 1 or not 0 < busy <= 1:
        raise ValueError("endpoints and concurrency must be positive and busy in (0, 1]")
    reference_calls = cost.model_calls + cost.shared_calls_saved
    hours = gpu_seconds(cost.model_calls, concurrency, busy, gpu) / 3600
    return Projection(gpu=gpu.name, endpoints=endpoints, concurrency=concurrency, busy=busy,
                      model_calls=cost.model_calls, reference_calls=reference_calls,
                      tokens_per_s=throughput(concurrency, gpu), gpu_hours=hours, wall_hours=hours / endpoints,
                      reference_gpu_hours=gpu_seconds(reference_calls, 1, 1.0, gpu) / 3600)


def assumptions(gpu: GpuProfile, concurrency: int, busy: float) -> list[str]:
    """The model's figures, one line each, as `sweep plan` prints them."""
    return [f"decode T(c) = T1*c/(1+alpha*(c-1)) tok/s per GPU; {gpu.name}: T1 = {gpu.t1:,.1f}, alpha = "
            f"{gpu.alpha}, T({concurrency}) = {throughput(concurrency, gpu):,.0f} tok/s ({gpu.basis})",
            f"prefill {gpu.prefill_tps:,.0f} tok/s per GPU; a GPU type scales T1 and prefill: "
            + ", ".join(f"{g.name} {g.t1 / A100.t1:.2f}x" for g in GPUS.values()),
            f"{PROMPT_TOKENS_PER_CALL:,} prompt + {COMPLETION_TOKENS_PER_CALL:,} generated tokens per call; calls "
            "per rollout by topology (engine/sweep/cost.py)",
            f"sweep layout: {concurrency} requests in flight per endpoint (one GPU each), busy {busy:g} of the "
            "time; wall = GPU-hours / endpoints (endpoints kept full; a job's own sequential steps not modelled)",
            "reference layout: one job per GPU, one request in flight, every job its own seed-bundle evaluations",
            "counted: charged rollouts and their evaluations; not counted: reflection calls (their own endpoint) "
            "and uncharged judge / probe calls"]
