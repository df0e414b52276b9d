# How far a joint turns from one frame to the next in a character's own animations, sampled at a
# frame rate (30 by default): the step sizes of a real session, for reading emw_bench's next-frame
# table (1°, 2°, 5° and 10° steps). Only the .glb's rotation channels with linear interpolation
# (slerp) of float keys are read; the angle is that of q_prev⁻¹ q_next.
#
#   python3 bench/animation_steps.py [--fps=30] FILE.glb...
#
# Prints per file, for every joint's step and for each frame's largest step over the joints (the
# step a session's next frame takes): how many, and the median, 90th and 99th percentile and
# largest angle in degrees.
import json
import math
import struct
import sys


def read_glb(path):
    with open(path, "rb") as f:
        data = f.read()
    (json_length,) = struct.unpack_from("<I", data, 12)
    gltf = json.loads(data[20:20 + json_length])
    at = 20 + json_length
    (bin_length,) = struct.unpack_from("<I", data, at)
    return gltf, data[at + 8:at + 8 + bin_length]


def accessor(gltf, binary, index):
    a = gltf["accessors"][index]
    if a["componentType"] != 5126:
        raise ValueError("accessor %d is not float" % index)
    view = gltf["bufferViews"][a["bufferView"]]
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[a["type"]]
    offset = view.get("byteOffset", 0) + a.get("byteOffset", 0)
    stride = view.get("byteStride", 4 * width)
    return [struct.unpack_from("<%df" % width, binary, offset + k * stride) for k in range(a["count"])]


def slerp(q0, q1, t):
    d = sum(a * b for a, b in zip(q0, q1))
    if d < 0:
        q1, d = [-x for x in q1], -d
    if d > 0.9995:
        q = [a + (b - a) * t for a, b in zip(q0, q1)]
    else:
        theta = math.acos(d)
        s = math.sin(theta)
        q = [(math.sin((1 - t) * theta) * a + math.sin(t * theta) * b) / s for a, b in zip(q0, q1)]
    n = math.sqrt(sum(x * x for x in q))
    return [x / n for x in q]


def sample(times, quats, t):
    if t <= times[0]:
        return quats[0]
    for k in range(len(times) - 1):
        if t <= times[k + 1]:
            return slerp(quats[k], quats[k + 1], (t - times[k]) / (times[k + 1] - times[k]))
    return quats[-1]


def steps_of(path, fps):
    """Per joint and frame step, and per frame the largest over the joints (a session's step)."""
    gltf, binary = read_glb(path)
    steps, frame_steps = [], []
    for animation in gltf.get("animations", []):
        channels = []
        for channel in animation["channels"]:
            sampler = animation["samplers"][channel["sampler"]]
            if channel["target"]["path"] != "rotation" or sampler.get("interpolation", "LINEAR") != "LINEAR":
                continue
            channels.append(([x[0] for x in accessor(gltf, binary, sampler["input"])],
                             accessor(gltf, binary, sampler["output"])))
        if not channels:
            continue
        start = min(times[0] for times, _ in channels)
        end = max(times[-1] for times, _ in channels)
        frames = max(2, int(math.ceil((end - start) * fps)) + 1)
        largest = [0.0] * (frames - 1)
        for times, quats in channels:
            previous = None
            for f in range(frames):
                q = sample(times, quats, start + (end - start) * f / (frames - 1))
                if previous is not None:
                    d = min(1.0, abs(sum(a * b for a, b in zip(previous, q))))
                    step = math.degrees(2 * math.acos(d))
                    steps.append(step)
                    largest[f - 1] = max(largest[f - 1], step)
                previous = q
        frame_steps += largest
    return sorted(steps), sorted(frame_steps)


def main(argv):
    fps = 30.0
    files = []
    for arg in argv:
        if arg.startswith("--fps="):
            fps = float(arg[6:])
        else:
            files.append(arg)
    if not files:
        print("usage: animation_steps.py [--fps=30] FILE.glb...", file=sys.stderr)
        return 2
    for path in files:
        steps, frame_steps = steps_of(path, fps)
        if not steps:
            print("%s: no linear rotation channels" % path)
            continue

        def pct(values, p):
            return values[min(len(values) - 1, int(p * len(values)))]

        name = path.split("/")[-1]
        for what, values in (("joint-frame steps", steps), ("frames, largest joint step", frame_steps)):
            print("%s: %d %s at %g frames/s; degrees: median %.2f, 90%% %.2f, 99%% %.2f, max %.2f"
                  % (name, len(values), what, fps, pct(values, 0.5), pct(values, 0.9), pct(values, 0.99), values[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
