"""The label-noise domain options ``certify`` and ``calibrate`` share: a certificate for
judge-labelled outcomes (``studies.qualify.certify_judge``)."""
from __future__ import annotations

from simlab.cli._args import positive_int, range_pair
from simlab.cli._output import UsageError

_DOMAIN = ("sensitivity", "specificity", "calibration_items")


def add_label_noise_arguments(p) -> None:
    g = p.add_argument_group("judge-labelled outcomes: the label-noise domain the worst case is taken over")
    g.add_argument("--sensitivity", type=range_pair, default=None, metavar="LO,HI",
                   help="the judge's sensitivity range, each arm's judge independently")
    g.add_argument("--specificity", type=range_pair, default=None, metavar="LO,HI",
                   help="the judge's specificity range, each arm's judge independently")
    g.add_argument("--calibration-items", type=positive_int, default=None, metavar="N",
                   help="human-labelled items per calibration set (exactly the registered size)")
    g.add_argument("--calibration-shared", action="store_true",
                   help="one calibration set for both arms (then one judge for both)")
    g.add_argument("--label-noise-nodes", choices=("edges", "corners"), default=None,
                   help="the nodes of the box searched: corners, edge midpoints and centre (edges, the default: 9 "
                        "nodes with a shared set, 49 per arm) or corners and centre (5 / 17); the worst case is over "
                        "these nodes, not proved between them")
    g.add_argument("--min-calibration", type=positive_int, default=None, metavar="N",
                   help="the method's min_calibration as the manifest's judge.min_calibration registers it "
                        "(default: --calibration-items)")


def label_noise_options(args) -> dict | None:
    """The domain options, or None when none is given (perfect labels)."""
    given = {k: getattr(args, k) for k in _DOMAIN}
    if all(v is None for v in given.values()):
        if args.calibration_shared or args.min_calibration is not None or args.label_noise_nodes is not None:
            raise UsageError("--calibration-shared, --min-calibration and --label-noise-nodes need the label-noise "
                             "domain: --sensitivity, --specificity and --calibration-items", "--sensitivity")
        return None
    missing = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is None]
    if missing:
        raise UsageError(f"{', '.join(missing)}: a label-noise domain needs --sensitivity, --specificity and "
                         "--calibration-items together", missing[0])
    if getattr(args, "looks", None) is not None or getattr(args, "engine", "auto") == "exact":
        raise UsageError("a label-noise domain is certified by simulation at a fixed sample (no --looks, no "
                         "--engine exact)", "--engine")
    return {**given, "calibration_shared": args.calibration_shared, "min_calibration": args.min_calibration,
            "nodes": args.label_noise_nodes or "edges"}
