"""Qualification: what a study proved about a method, and whether it covers a design.

The public API (the private layout below may change; import from here):

- ``domain``      -- ``QualificationDomain`` (design cells x nuisance at the null boundary),
                     ``Axis``, ``IntAxis``, the feasible-discordance helpers;
- ``policy``      -- ``QualificationPolicy`` and the built-in policies, data files
                     ``policies/*.toml`` (``named_policy``, ``policy_names``);
- ``verdicts``    -- scenario verdicts from Monte Carlo counts, with staged Clopper-Pearson
                     bounds valid under adaptive replication (``stage_confidence``);
- ``record`` / ``build`` -- the record schema and how a record is assembled;
- ``verify``      -- ``load_record``: hashes, dates, counts re-derived from the dataset,
                     signature (``simlab.signing``), method identity;
- ``records``     -- where records live (``records_dir``: ``--records``, ``SIMLAB_RECORDS``,
                     the checkout's ``results/qualification``, or the installed copy);
- ``coverage``    -- ``DesignPoint``, ``covers``, ``find_coverage`` (grid points only);
- ``certificate`` -- a method certified at exactly one design (``studies.qualify.certify`` makes them).
"""
from __future__ import annotations

from simlab.clock import format_time, parse_time, utcnow
from simlab.hashing import content_hash, file_hash, same_digest, short
from .build import (COVERAGE_RULE, build_record, cell_verdicts, check_scenarios, qualified_subdomain, size_label,
                    worst_case)
from .certificate import (CERT_SUFFIX, Certificate, CertifiedDesign, CertPoint, certificate_covers,
                          certificate_paths, load_certificate, verify_certificate)
from .design import Coverage, DesignPoint
from .scope import covers, find_coverage
from .domain import Axis, IntAxis, QualificationDomain, clip_discordance, discordance_limits, nuisance_grid
from .points import NuisancePoint, ScenarioPoint
from .policy import QualificationPolicy, named_policy, policy_names, reduced_domain, standard_domain, standard_policy
from .record import (SCHEMA_VERSION, CellVerdict, DatasetRef, RecordedMethod, QualificationRecord, QualifiedRule,
                     QualifiedSubdomain, ScenarioTable, WorstCase)
from .records import ENV_VAR, record_paths, record_stem, records_dir, unreadable_files
from .verdicts import (EXCEEDS, MC_RULE, QUALIFIED, UNDETERMINED, VERDICTS, RecordError, StaleRecordError,
                       TamperedRecordError, combine_verdicts, cp_bounds, cp_lower, cp_upper, stage_confidence,
                       verdict_of)
from .theorem import THEOREM_SUFFIX, TheoremRecord, build_theorem_record, load_theorem_record, theorem_covers, theorem_paths
from .verify import UntrustedRecordError, load_record, verify_record


__all__ = [
    "Axis", "CERT_SUFFIX", "COVERAGE_RULE", "CellVerdict", "CertPoint", "Certificate", "CertifiedDesign", "Coverage",
    "DatasetRef", "DesignPoint", "ENV_VAR", "EXCEEDS", "IntAxis", "MC_RULE", "NuisancePoint", "ScenarioPoint", "RecordedMethod", "QUALIFIED",
    "QualificationDomain", "QualificationPolicy", "QualificationRecord", "QualifiedRule", "QualifiedSubdomain",
    "RecordError", "SCHEMA_VERSION", "ScenarioTable", "StaleRecordError", "TamperedRecordError",
    "THEOREM_SUFFIX", "TheoremRecord", "UNDETERMINED", "UntrustedRecordError", "build_theorem_record",
    "load_theorem_record", "theorem_covers", "theorem_paths", "VERDICTS", "WorstCase", "build_record", "content_hash",
    "cell_verdicts", "certificate_covers", "certificate_paths", "check_scenarios", "clip_discordance",
    "combine_verdicts", "covers", "cp_bounds", "cp_lower", "cp_upper", "discordance_limits", "file_hash",
    "find_coverage", "format_time", "load_certificate", "load_record", "named_policy", "nuisance_grid", "parse_time",
    "policy_names", "qualified_subdomain", "record_paths", "record_stem", "records_dir", "unreadable_files", "reduced_domain",
    "stage_confidence", "standard_domain", "standard_policy", "same_digest", "short", "size_label", "utcnow", "verdict_of", "verify_certificate", "verify_record",
    "worst_case",
]
