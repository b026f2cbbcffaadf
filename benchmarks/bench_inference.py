"""Network evaluation speed of the Gardner AlphaZero network: float32 against the tricks that might pay.

    python benchmarks/bench_inference.py                  # CPU, ~1 minute
    python benchmarks/bench_inference.py --device cuda    # the same on a GPU (bf16 autocast, no channels-last)

Each row: network calls of ``batch`` observations (4: one position's search, leaves waiting by virtual
loss; 1024: self-play's 256 games x 4 leaves), median over ``--repeats`` timed rounds after warm-up, and
the speed relative to plain float32 in the same run. Variants: ``float32``; ``bf16`` (autocast);
``channels_last`` (memory format of the input and weights); ``compile`` (``torch.compile``); ``int8``
(dynamic quantization of the linear layers, CPU only: convolutions are not covered by it).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time


import agents.runs  # noqa: F401  (first: its OpenMP setting applies before torch loads)
import torch

from agents.alphazero.train import gardner_config, make_net, start_game
from agents.devices import resolve_device
from agents.runs import machine, machine_text


def timed(fn, repeats: int, sync) -> float:
    """Median seconds of one call of ``fn`` over ``repeats`` rounds (after three warm-up calls)."""
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def variants(net, device: torch.device) -> dict:
    """name -> (network, input transform, autocast context factory)."""
    out = {"float32": (net, lambda x: x, None)}
    if device.type == "cuda":
        out["bf16"] = (net, lambda x: x, lambda: torch.autocast("cuda", dtype=torch.bfloat16))
        return out
    out["bf16"] = (net, lambda x: x, lambda: torch.autocast("cpu", dtype=torch.bfloat16))
    out["channels_last"] = (copy.deepcopy(net).to(memory_format=torch.channels_last), lambda x: x, None)
    try:
        out["compile"] = (torch.compile(copy.deepcopy(net)), lambda x: x, None)
    except Exception as exc:  # no compiler toolchain: say so, measure the rest
        print(f"torch.compile unavailable: {exc}")
    try:
        quantized = torch.ao.quantization.quantize_dynamic(copy.deepcopy(net), {torch.nn.Linear}, dtype=torch.qint8)
        out["int8"] = (quantized, lambda x: x, None)
    except Exception as exc:
        print(f"int8 dynamic quantization unavailable: {exc}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batches", default="4,1024")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    started = machine()
    config = gardner_config("unused")
    net, encoding = make_net(config), start_game(config).encoding
    net = net.to(device).eval()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    print(f"Gardner network ({sum(p.numel() for p in net.parameters()):,} parameters) on {device}, "
          f"{args.threads} torch threads, median of {args.repeats}")
    print(f"| variant | batch | ms per call | positions/s | vs float32 |\n|---|---|---|---|---|")
    for batch in (int(b) for b in args.batches.split(",")):
        x = torch.rand(batch, *encoding.shape, device=device)
        base = None
        for name, (model, transform, context) in variants(net, device).items():
            def call(model=model, context=context, xs=transform(x)):
                with torch.inference_mode():
                    if context is None:
                        model(xs)
                    else:
                        with context():
                            model(xs)
            try:
                seconds = timed(call, args.repeats, sync)
            except Exception as exc:  # a variant that fails here is reported, not fatal
                print(f"| {name} | {batch} | failed: {type(exc).__name__} | | |")
                continue
            base = base or seconds
            print(f"| {name} | {batch} | {1000 * seconds:.3f} | {batch / seconds:,.0f} | {base / seconds:.2f}x |",
                  flush=True)
    print(machine_text(started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
