"""The built GEMV issues its first round of weights before the programmatic-launch wait.

gemv.cu's GEMVs of up to 8 rows of x load their first round of weights before pdl_wait(), so that
those bytes stream while the previous kernel ends. ptxas is free to schedule the wait
(griddepcontrol.wait, SASS ACQBULK) above loads whose results are needed only after it, and in the
CUDA 13 build it did so in every such kernel: the loads were issued after the wait, and batch-1
decode steps of an 8B model took 0.9% longer (pdl.cuh, pdl_wait_behind_loads). Nothing in a test's
numbers shows the difference, so this reads the machine code: for each of the eight m <= 8 GEMV
kernels (whole-row loads at m = 1, one per epilogue, and kResidualNorm's 2-CTA kernel with
kWideUnroll slices a round; quads at m = 2..8, one per epilogue but kResidualNorm, which takes
one row), the weight loads of the first round's first kUnroll slices (2 x kUnroll per thread:
the thread's two rows of each slice, `LDG.E.NA...` for ld.global.nc.L1::no_allocate) must come
before the first ACQBULK, and no more: a wide round's other slices go out after the wait.

Usage: sass_order_test.py GEMV_SOURCE OBJECT... (the se_backend_cuda objects; gemv.cu.o is
picked). cuobjdump and nvdisasm come from PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm
wheels in the Python environment that runs this (scripts/setup-python-tests).
"""
import os
import re
import subprocess
import sys

# gemv_kernel<1, ctas, epilogue, loads, in_flight>: CTAs an SM, the epilogue, GemvLoads (0 kQuads,
# 1 kRows), slices in flight.
KERNEL = re.compile(
    r"_ZN\w*gemv_kernelILi1ELi(\d)ELNS0_12GemvEpilogueE(\d)ELNS1_9GemvLoadsE(\d)ELi(\d+)E\w*")
WEIGHT_LOAD = re.compile(r"\bLDG\.E\.NA\b")
WAIT = re.compile(r"\bACQBULK\b")
# (ctas, epilogue, loads, in_flight) with "U" for kUnroll and "W" for kWideUnroll: kStore,
# kSiluMul, kRopeStore, kResidualNorm at m = 1, kResidualNorm's 2-CTA kernel (o and down at one
# row); all but kResidualNorm at m = 2..8.
WANTED = ({("3", e, "1", "U") for e in "0123"} | {("2", "3", "1", "W")} |
          {("3", e, "0", "U") for e in "012"})


def find_tool(name):
    """The wheel's binary under this interpreter's prefix (nvidia/cu13/bin/NAME)."""
    for root, _, files in os.walk(sys.prefix):
        if name in files and os.path.basename(root) == "bin" and "nvidia" in root:
            path = os.path.join(root, name)
            os.chmod(path, 0o755)  # wheels may drop the executable bit
            return path
    sys.exit(f"sass_order_test: {name} not found under {sys.prefix} "
             "(scripts/setup-python-tests installs it)")


def unrolls_of(gemv_source):
    """{"U": kUnroll, "W": kWideUnroll} of gemv.cu: slices a warp has in flight, so 2 x that many
    loads a round."""
    with open(gemv_source) as f:
        text = f.read()
    found = {}
    for key, name in (("U", "kUnroll"), ("W", "kWideUnroll")):
        match = re.search(r"constexpr int " + name + r" = (\d+);", text)
        if not match:
            sys.exit(f"sass_order_test: no {name} in {gemv_source}")
        found[key] = match.group(1)
    return found


def loads_before_wait(sass):
    """(weight loads before the first wait, weight loads in all, waits) of one kernel's SASS."""
    lines = sass.splitlines()
    waits = [i for i, line in enumerate(lines) if WAIT.search(line)]
    loads = [i for i, line in enumerate(lines) if WEIGHT_LOAD.search(line)]
    first_wait = waits[0] if waits else len(lines)
    return sum(1 for i in loads if i < first_wait), len(loads), len(waits)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    unrolls = unrolls_of(sys.argv[1])
    by_value = {v: k for k, v in unrolls.items()}
    # CMake's $<TARGET_OBJECTS:...> may arrive as one ;-separated argument.
    paths = [o for arg in sys.argv[2:] for o in arg.split(";") if o]
    objects = [o for o in paths if os.path.basename(o) == "gemv.cu.o"]
    if len(objects) != 1:
        sys.exit(f"sass_order_test: expected one gemv.cu.o among the objects, got {objects}")
    cuobjdump = find_tool("cuobjdump")
    env = dict(os.environ, PATH=os.path.dirname(find_tool("nvdisasm")) + os.pathsep +
               os.environ.get("PATH", ""))
    usage = subprocess.run([cuobjdump, "-res-usage", objects[0]], capture_output=True,
                           text=True, check=True, env=env).stdout
    names = {(m.group(1), m.group(2), m.group(3), by_value.get(m.group(4), m.group(4))): m.group(0)
             for m in KERNEL.finditer(usage)}
    failures = []
    if set(names) != WANTED:
        failures.append(f"found m <= 8 GEMV kernels {sorted(names)}, expected {sorted(WANTED)}")
    for kernel, name in sorted(names.items()):
        ctas, epi, loads, in_flight = kernel
        epilogue = "{} ({}, {} CTAs, {} slices)".format(
            epi, "rows" if loads == "1" else "quads", ctas, unrolls.get(in_flight, in_flight))
        round_loads = 2 * min(int(unrolls.get(in_flight, in_flight)), int(unrolls["U"]))
        sass = subprocess.run([cuobjdump, "-sass", "-fun", name, objects[0]], capture_output=True,
                              text=True, check=True, env=env).stdout
        before, total, waits = loads_before_wait(sass)
        print(f"epilogue {epilogue}: {before} of {total} weight loads before the first of "
              f"{waits} waits (want {round_loads})")
        if waits == 0:
            failures.append(f"epilogue {epilogue}: no griddepcontrol.wait (ACQBULK) in {name}")
        elif before != round_loads:
            failures.append(f"epilogue {epilogue}: {before} weight loads before the wait, "
                            f"want the first round's first {round_loads}")
    if failures:
        sys.exit("sass_order_test: FAILED\n  " + "\n  ".join(failures))
    print("sass_order_test: OK")


if __name__ == "__main__":
    main()
