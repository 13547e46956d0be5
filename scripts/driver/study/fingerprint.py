"""A machine's fingerprint, and the machine key derived from it.

The fingerprint is what /proc/cpuinfo, lscpu, /proc/meminfo and nvidia-smi say about the hardware a
cell's speed depends on, beyond the model name: vendor, family, model, stepping, the CPU flags that
change which kernels run (AVX, AVX-512, AMX, VNNI, bf16, FMA), cache sizes, cores and threads per
core, memory, the hypervisor, the GPUs and their driver. Nothing in it changes while the machine
runs (no clock speed, load or temperature), so one machine keeps one fingerprint.

`machine: auto` keys a machine by a readable stem (CPU model, logical cores, GPU) plus the first
hex digits of the fingerprint's hash: two VMs sold as "AMD EPYC, 2 cores" that differ in CPU family
or one flag get two keys. Keys written before the fingerprint (a stem alone) stay readable.

Every parser takes text, so tests feed it canned output; `read_fingerprint` reads this machine.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess

HASH_DIGITS = 8
GPU_FIELDS = ("name", "driver_version", "memory.total")
# Flags that change which kernels a framework or BLAS runs; every avx512* and amx* flag is kept too.
KERNEL_FLAGS = {"avx", "avx2", "fma", "f16c", "sse4_2", "avx_vnni", "avx_vnni_int8", "avx_ne_convert"}
# The fields that identify hardware; `hash` is computed over exactly these.
FIELDS = ("vendor", "model_name", "family", "model", "stepping", "flags", "caches",
          "logical_cpus", "cores_per_socket", "threads_per_core", "sockets", "mem_total_gib",
          "hypervisor", "gpus")


def _kernel_flag(flag):
    return flag in KERNEL_FLAGS or flag.startswith(("avx512", "amx"))


def parse_cpuinfo(text):
    """The first processor's identity and kernel-relevant flags from /proc/cpuinfo."""
    first = {}
    for line in (text or "").splitlines():
        if not line.strip():
            if first:
                break
            continue
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    flags = first.get("flags", first.get("Features", ""))
    return {
        "vendor": first.get("vendor_id"),
        "model_name": first.get("model name"),
        "family": first.get("cpu family"),
        "model": first.get("model"),
        "stepping": first.get("stepping"),
        "flags": sorted(f for f in flags.split() if _kernel_flag(f)),
        "hypervisor_flag": "hypervisor" in flags.split(),
    }


def parse_lscpu(text):
    """Topology, caches and hypervisor from `lscpu --json` (util-linux)."""
    try:
        rows = json.loads(text)["lscpu"]
    except (TypeError, ValueError, KeyError):
        return {}
    fields = {}

    def walk(items):
        for row in items:
            fields[row.get("field", "").rstrip(":")] = row.get("data")
            walk(row.get("children") or [])

    walk(rows)
    caches = {name.split()[0]: fields[name] for name in fields
              if re.match(r"^L\d\w* cache$", name) and fields[name]}

    def integer(name):
        value = fields.get(name)
        return int(value) if value and str(value).isdigit() else None

    return {"logical_cpus": integer("CPU(s)"), "cores_per_socket": integer("Core(s) per socket"),
            "threads_per_core": integer("Thread(s) per core"), "sockets": integer("Socket(s)"),
            "hypervisor": fields.get("Hypervisor vendor"), "caches": caches,
            "family": fields.get("CPU family"), "model": fields.get("Model"),
            "stepping": fields.get("Stepping"), "vendor": fields.get("Vendor ID")}


def parse_meminfo(text):
    """MemTotal in GiB, rounded to whole GiB (the kernel's reservations vary by a few MB)."""
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", text or "", re.M)
    return round(int(match.group(1)) / 2**20) if match else None


def parse_nvidia_smi(text):
    """GPUs from `nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader`."""
    gpus = []
    for line in (text or "").splitlines():
        values = [v.strip() for v in line.split(",")]
        if len(values) == len(GPU_FIELDS) and values[0]:
            gpus.append(dict(zip(GPU_FIELDS, values)))
    return gpus


def build(cpuinfo, lscpu=None, mem_total_gib=None, gpus=None, logical_cpus=None):
    """The fingerprint from parsed parts (lscpu fills what /proc/cpuinfo lacks, on ARM say)."""
    lscpu = lscpu or {}
    fp = {key: cpuinfo.get(key) or lscpu.get(key) for key in
          ("vendor", "model_name", "family", "model", "stepping")}
    fp.update(flags=cpuinfo.get("flags") or [], caches=lscpu.get("caches") or {},
              logical_cpus=lscpu.get("logical_cpus") or logical_cpus,
              cores_per_socket=lscpu.get("cores_per_socket"),
              threads_per_core=lscpu.get("threads_per_core"), sockets=lscpu.get("sockets"),
              mem_total_gib=mem_total_gib,
              hypervisor=lscpu.get("hypervisor") or ("unknown" if cpuinfo.get("hypervisor_flag")
                                                     else None),
              gpus=sorted(gpus or [], key=lambda g: json.dumps(g, sort_keys=True)))
    fp["hash"] = fingerprint_hash(fp)
    return fp


def fingerprint_hash(fp):
    """Hex SHA-256 of the identifying fields, in a canonical JSON form."""
    canon = json.dumps({k: fp.get(k) for k in FIELDS}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def _run(cmd):
    if not shutil.which(cmd[0]):
        return ""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def read_fingerprint():
    """This machine's fingerprint."""
    gpus = parse_nvidia_smi(_run(["nvidia-smi", "--query-gpu=" + ",".join(GPU_FIELDS),
                                  "--format=csv,noheader"]))
    return build(parse_cpuinfo(_read("/proc/cpuinfo")), parse_lscpu(_run(["lscpu", "--json"])),
                 parse_meminfo(_read("/proc/meminfo")), gpus, os.cpu_count())


def stem(cpu_model, logical_cpus, gpus=()):
    """The readable part of a key: CPU model, logical cores, GPU models (the key before 2026-11)."""
    cpu = re.sub(r"\((R|TM)\)|CPU|Processor|@.*$|\d+-Core", "", cpu_model or "", flags=re.I)
    parts = [cpu or "machine"] + (["%sc" % logical_cpus] if logical_cpus else [])
    parts += [g.get("name", "gpu") for g in gpus or []]
    key = re.sub(r"[^A-Za-z0-9]+", "-", "-".join(parts)).strip("-").lower()
    return key[:70] or "machine"


def machine_key(fp):
    """Readable stem plus the fingerprint's short hash: amd-epyc-2c-1a2b3c4d."""
    return "%s-%s" % (stem(fp.get("model_name"), fp.get("logical_cpus"), fp.get("gpus")),
                      (fp.get("hash") or fingerprint_hash(fp))[:HASH_DIGITS])


def differences(old, new):
    """['family: 25 -> 26', 'flags: + avx512f', ...]: what differs between two fingerprints."""
    out = []
    for key in FIELDS:
        a, b = (old or {}).get(key), (new or {}).get(key)
        if a == b:
            continue
        if key == "flags":
            added = sorted(set(b or []) - set(a or []))
            gone = sorted(set(a or []) - set(b or []))
            out.append("flags: " + ", ".join(["+ " + f for f in added] + ["- " + f for f in gone]))
        else:
            out.append("%s: %s -> %s" % (key, json.dumps(a), json.dumps(b)))
    return out


def compare_machines(machines_a, machines_b):
    """Do two results come from one machine? `machines_*`: facts.json's "machines" ({key: the
    machine facts of a cell file}); twin keys are left out. same_machine is None where a side has
    no fingerprint (results from before fingerprints)."""
    def hashes(machines):
        out = set()
        for key, facts in (machines or {}).items():
            if key.endswith(".twin") or not isinstance(facts, dict):
                continue
            found = facts.get("fingerprints") or [(facts.get("fingerprint") or {}).get("hash")]
            out.update(h for h in found if h)
        return out

    a, b = hashes(machines_a), hashes(machines_b)
    if not a or not b:
        return {"same_machine": None, "note": "one side's results carry no machine fingerprint: "
                "whether they come from one machine is unknown"}
    if len(a) > 1 or len(b) > 1:
        return {"same_machine": False, "note": "a side holds %d and %d fingerprints: results "
                "of several machines" % (len(a), len(b))}
    if a == b:
        return {"same_machine": True, "note": "one machine (fingerprint %s)" % next(iter(a))[:8]}
    fa = next(f.get("fingerprint") for f in machines_a.values() if isinstance(f, dict)
              and (f.get("fingerprint") or {}).get("hash") in a)
    fb = next(f.get("fingerprint") for f in machines_b.values() if isinstance(f, dict)
              and (f.get("fingerprint") or {}).get("hash") in b)
    return {"same_machine": False, "note": "different machines: " + "; ".join(
        differences(fa, fb) or ["fingerprints %s and %s" % (min(a)[:8], min(b)[:8])])}


def compare_folders(tables_a, tables_b):
    """compare_machines over two tables folders' facts.json (None where a folder has none)."""
    sides = []
    for folder in (tables_a, tables_b):
        try:
            with open(os.path.join(str(folder), "facts.json")) as handle:
                sides.append(json.load(handle).get("machines") or {})
        except (OSError, ValueError):
            sides.append({})
    return compare_machines(*sides)


def describe(facts):
    """A machine's fingerprint and probe in words, for the report's machine line: [] when the
    facts (a cell file's provenance.machine, as facts.json holds it) carry neither."""
    parts = []
    fp = facts.get("fingerprint") or {}
    if fp:
        flags = ", ".join(fp.get("flags") or []) or "none of them"
        caches = ", ".join("%s %s" % (k, str(v).split(" (")[0])
                           for k, v in sorted((fp.get("caches") or {}).items()))
        parts.append("%s family %s model %s stepping %s; kernel flags: %s%s; %s threads per core; "
                     "hypervisor: %s; fingerprint %s" % (
                         fp.get("vendor"), fp.get("family"), fp.get("model"), fp.get("stepping"),
                         flags, "; caches: " + caches if caches else "",
                         fp.get("threads_per_core") or "?", fp.get("hypervisor") or "none",
                         str(fp.get("hash"))[:HASH_DIGITS]))
    if len(facts.get("fingerprints") or []) > 1:
        parts.append("%d different machines wrote cells under this key"
                     % len(facts["fingerprints"]))
    probe = facts.get("probe") or {}
    if probe.get("cells"):
        cells = []
        for cell, c in sorted(probe["cells"].items()):
            line = "%s %.3g ms" % (cell.split(".")[0], 1e3 * (c.get("median_s") or 0))
            if c.get("ratio") is not None:
                line += " (%.2fx the key's reference probe)" % c["ratio"]
            cells.append(line)
        parts.append("probe (%s, %s): %s" % (probe.get("stamp"), probe.get("verdict"),
                                              ", ".join(cells)))
    return parts
