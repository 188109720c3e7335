"""The dataset beside a record: every evaluated scenario (dimension ``scenario``) and the
per-cell worst upper bound, as an xarray Dataset written to netCDF.  Built from the same
``ScenarioTable`` the record holds, so ``verify.check_dataset`` can re-derive the record's
counts from it."""
from __future__ import annotations

import json

import numpy as np

from .policy import QualificationPolicy
from .record import ScenarioTable
from .verdicts import MC_RULE, VERDICTS


def build_qualification_dataset(policy: QualificationPolicy, method_identity: dict, scen: ScenarioTable, software: dict[str, str]):
    import xarray as xr

    dom = policy.domain
    n = np.array(scen.n_reps, np.int64)
    x = np.array(scen.n_pass, np.int64)
    inc = np.array(scen.n_inconclusive, np.int64)
    lo, up = np.array(scen.lower), np.array(scen.upper)
    rate = x / n
    codes = {v: i for i, v in enumerate(VERDICTS)}
    margin = np.array(scen.margin)
    ds = xr.Dataset(
        {
            "n_reps": ("scenario", n), "n_pass": ("scenario", x), "n_inconclusive": ("scenario", inc),
            "false_pass_rate": ("scenario", rate),
            "false_pass_rate_mcse": ("scenario", np.sqrt(rate * (1 - rate) / n)),
            "cp_lower": ("scenario", lo), "cp_upper": ("scenario", up),
            "verdict": ("scenario", np.array([codes[v] for v in scen.verdict], np.int8),
                        {"flag_values": "0 1 2", "flag_meanings": " ".join(VERDICTS)}),
            "inconclusive_rate": ("scenario", inc / n),
        },
        coords={
            "scenario": np.arange(len(scen)),
            "clusters": ("scenario", np.array(scen.clusters, np.int64)),
            "size_index": ("scenario", np.array(scen.size, np.int64)),
            "trials_mean": ("scenario", np.array([dom.cluster_sizes[s].mean() for s in scen.size])),
            "rho": ("scenario", np.array(scen.rho)),
            "margin": ("scenario", margin),
            "noise_index": ("scenario", np.array(scen.noise, np.int64)),
            "baseline": ("scenario", np.array(scen.baseline)),
            "discordance": ("scenario", np.array(scen.discordance)),
            "true_difference": ("scenario", -margin),
            "stage": ("scenario", np.array([0 if s == "grid" else 1 for s in scen.stage], np.int8),
                      {"flag_values": "0 1", "flag_meanings": "grid refine"}),
        },
    )
    cell_dims = ("cell_clusters", "cell_size", "cell_rho", "cell_margin", "cell_noise")
    shape = (len(dom.clusters.grid), len(dom.cluster_sizes), len(dom.rho.grid), len(dom.margin.grid),
             len(dom.label_noise))
    worst, worst_rate = np.full(shape, -1.0), np.full(shape, -1.0)
    kpos = {k: i for i, k in enumerate(dom.clusters.grid)}
    rpos = {r: i for i, r in enumerate(dom.rho.grid)}
    mpos = {m: i for i, m in enumerate(dom.margin.grid)}
    for i in range(len(scen)):
        j = (kpos[scen.clusters[i]], scen.size[i], rpos[scen.rho[i]], mpos[scen.margin[i]], scen.noise[i])
        if up[i] > worst[j]:
            worst[j], worst_rate[j] = up[i], rate[i]
    ds["worst_upper"] = (cell_dims, worst)
    ds["worst_upper_rate"] = (cell_dims, worst_rate)
    ds = ds.assign_coords(cell_clusters=np.array(dom.clusters.grid, np.int64),
                          cell_size=np.arange(len(dom.cluster_sizes)), cell_rho=np.array(dom.rho.grid),
                          cell_margin=np.array(dom.margin.grid), cell_noise=np.arange(len(dom.label_noise)))
    ds.attrs.update({
        "title": f"qualification of {method_identity['name']}",
        "method": method_identity["name"], "method_identity": json.dumps(method_identity),
        "policy": json.dumps(policy.canonical()), "policy_sha256": policy.sha256,
        "threshold": policy.threshold, "alpha": policy.alpha, "mc_confidence": policy.mc_confidence,
        "mc_rule": MC_RULE, "stage_confidence": policy.stage_confidence, "seed": policy.seed,
        "cluster_sizes": json.dumps([s.model_dump(mode="json") for s in dom.cluster_sizes]),
        "label_noise": json.dumps([s.model_dump(mode="json") for s in dom.label_noise]),
        "software": json.dumps(software),
    })
    return ds
