#!/usr/bin/env python3
"""
pyHanko (0.38) as an independent judge of a batch of PDFs, in one Python process.

Job (JSON, as argv[1] -- inline, or the path of a file holding it -- or on stdin):

    {
      "trust": "/abs/anchors.pem",   # PEM (or DER) trust anchors: the only roots trusted
      "at": "2030-01-01T00:00:00Z",  # validation time, or null for now
      "files": ["/abs/a.pdf", ...],
      "revocation": "require",       # optional: "require" (default) or "hard-fail", see below
      "timeout": 60,                 # optional: seconds per file before it is refused
      "memory_mb": 2048              # optional: address-space limit of the worker
    }

Prints one JSON object per file, in the order given, one per line (JSON Lines), as each is judged.

Every embedded signature, document time-stamps included, gets pyHanko's own status (intact, valid,
trusted, coverage, modification level, docmdp_ok, bottom line) and the ETSI EN 319 102-1 indication
and sub-indication of pyHanko's AdES validation:

- a signature (/Sig): `ades_lta_validation` (EN 319 102-1 5.6.3, the chain of document
  time-stamps as the evidence record), exactly what `pyhanko sign adesverify` runs;
- a document time-stamp (/DocTimeStamp): `ades_timestamp_validation` at the validation time and,
  when that is INDETERMINATE, past validation with the proofs of existence of the time-stamps
  after it: the per-time-stamp form of pyHanko's own evidence-record check
  (`ades._validate_prima_facie_poe`), which `ades_lta_validation` runs but only logs when it fails.

A file is "accepted" when it has a signature and every signature and document time-stamp is intact,
valid and trusted, covers the whole file or is followed only by what pyHanko's difference analysis
calls LTA updates, has AdES indication PASSED, and (a signature) its signature time-stamp, if any,
PASSED too. Its "indication" is the worst of its signatures' (NO_SIGNATURE without one, ERROR when
refused). pyHanko's AdES indication does not look at modifications after signing: a page changed in
a later update is TOTAL_PASSED there, and rejected here for its modification level (OTHER).

Offline only: revocation data comes from the file (its /DSS and the CMS revocation attributes),
nothing is fetched (`RevinfoOnlineFetchingRule.LOCAL_ONLY`, `CertificateFetchingRule.NEVER_FETCH`:
what `ValidationContext(allow_fetching=False)` is in the AdES API); trust roots are the PEM's
certificates alone.

Revocation: "require" (the default, what `adesverify` uses) wants revocation data for every
certificate in every path but the anchor. pyHanko's "hard-fail" is the legacy certvalidator mode
(`RevocationCheckingRule.CHECK_IF_DECLARED`): it checks only certificates that name a CRL
distribution point or an OCSP responder, so for certificates that name neither it checks nothing
at all. Choose it explicitly to see that difference.

Robustness: files are judged in a forked worker process (pyHanko imported once, in the parent).
A file that raises is "refused: <reason>"; a file that takes longer than `timeout` or kills the
worker (memory limit, crash) is refused too, and a new worker takes the rest of the batch.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import json
import logging
import multiprocessing
import os
import resource
import sys
import time
import traceback
from copy import copy
from datetime import datetime, timezone

from asn1crypto import x509
from pyhanko.keys import load_certs_from_pemder_data
from pyhanko.pdf_utils import crypt
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign.ades.report import AdESStatus
from pyhanko.sign.diff_analysis import DEFAULT_DIFF_POLICY, DiffResult
from pyhanko.sign.fields import SigSeedSubFilter, enumerate_sig_fields
from pyhanko.sign.general import find_cms_attribute_iter
from pyhanko.sign.validation import DocumentSecurityStore, ades
from pyhanko.sign.validation.errors import NoDSSFoundError, SignatureValidationError
from pyhanko.sign.validation.pdf_embedded import EmbeddedPdfSignature
from pyhanko.sign.validation.policy_decl import (
    CertificateFetchingRule,
    LocalKnowledge,
    PdfSignatureValidationSpec,
    RevinfoOnlineFetchingRule,
    RevocationInfoGatheringSpec,
    SignatureValidationSpec,
    bootstrap_validation_data_handlers,
)
from pyhanko.sign.validation.status import DocumentTimestampStatus
from pyhanko_certvalidator.context import CertValidationPolicySpec
from pyhanko_certvalidator.ltv.poe import POEManager
from pyhanko_certvalidator.ltv.types import ValidationTimingInfo
from pyhanko_certvalidator.policy_decl import (
    CertRevTrustPolicy,
    FreshnessReqType,
    RevocationCheckingPolicy,
)
from pyhanko_certvalidator.registry import SimpleTrustManager

# The sub-filters pyHanko validates (it skips, with a warning, a signature of any other: here it is a FORMAT_FAILURE).
SUPPORTED_SUBFILTERS = {str(v.value) for v in SigSeedSubFilter}
INDICATION = {AdESStatus.PASSED: 'TOTAL_PASSED', AdESStatus.INDETERMINATE: 'INDETERMINATE', AdESStatus.FAILED: 'TOTAL_FAILED'}
# Not a verdict on a signature but on what judging the file costs: the whole file is refused.
RESOURCE_ERRORS = (MemoryError, RecursionError)
# Worst first, for a file's overall indication.
SEVERITY = ['TOTAL_FAILED', 'ERROR', 'INDETERMINATE', 'TOTAL_PASSED']


# ---------------------------------------------------------------- the job


def read_job() -> dict:
    if len(sys.argv) > 1:
        arg = sys.argv[1]
        if arg.lstrip().startswith('{'):
            return json.loads(arg)
        with open(arg, encoding='utf-8') as f:
            return json.load(f)
    return json.load(sys.stdin)


def parse_time(value) -> datetime | None:
    if value is None:
        return None
    dt = datetime.fromisoformat(str(value).replace('Z', '+00:00'))
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)


def build_spec(trust_path: str, revocation: str) -> PdfSignatureValidationSpec:
    with open(trust_path, 'rb') as f:
        anchors = list(load_certs_from_pemder_data(f.read()))
    if not anchors:
        raise ValueError(f'no certificate in {trust_path}')
    if revocation == 'require':
        checking = RevocationCheckingPolicy.from_legacy('require')
    elif revocation == 'hard-fail':
        checking = RevocationCheckingPolicy.from_legacy('hard-fail')
    else:
        raise ValueError(f'revocation must be "require" or "hard-fail", not {revocation!r}')
    cert_policy = CertValidationPolicySpec(
        trust_manager=SimpleTrustManager.build(trust_roots=anchors),
        # As `pyhanko sign adesverify` has it: revocation data must be fresh relative to the time it is used at.
        revinfo_policy=CertRevTrustPolicy(checking, freshness=None, freshness_req_type=FreshnessReqType.MAX_DIFF_REVOCATION_VALIDATION),
    )
    return PdfSignatureValidationSpec(
        signature_validation_spec=SignatureValidationSpec(
            cert_validation_policy=cert_policy,
            revinfo_gathering_policy=RevocationInfoGatheringSpec(
                online_fetching_rule=RevinfoOnlineFetchingRule.LOCAL_ONLY,
                certificate_fetching_rule=CertificateFetchingRule.NEVER_FETCH,
            ),
        ),
        diff_policy=DEFAULT_DIFF_POLICY,
    )


# ---------------------------------------------------------------- helpers


def iso(dt: datetime | None) -> str | None:
    return dt.astimezone(timezone.utc).isoformat().replace('+00:00', 'Z') if isinstance(dt, datetime) else None


def enum_name(value) -> str | None:
    return getattr(value, 'name', None) if value is not None else None


def short(e: BaseException, limit: int = 300) -> str:
    text = (getattr(e, 'failure_message', None) or str(e) or type(e).__name__).strip().replace('\n', ' ')
    name = type(e).__name__
    text = text if text.startswith(name) else f'{name}: {text}'
    return text if len(text) <= limit else text[: limit - 1] + '…'


def indication_of(sub) -> tuple[str, str | None]:
    """(indication, sub-indication) of a pyHanko AdES sub-indication; PASSED has none."""
    if sub is None:
        return 'ERROR', None
    status = sub.status
    return INDICATION[status], (None if status == AdESStatus.PASSED else sub.standard_name)


def cert_summary(cert: x509.Certificate | None) -> dict | None:
    if cert is None:
        return None
    return {'subject': cert.subject.human_friendly, 'issuer': cert.issuer.human_friendly, 'sha256': cert.sha256.hex()}


def status_fields(status, trusted_override: bool | None = None) -> dict:
    """pyHanko's own verdict fields, from a PdfSignatureStatus / DocumentTimestampStatus (or None)."""
    if status is None:
        return {k: None for k in ('intact', 'valid', 'trusted', 'revoked', 'coverage', 'modification_level', 'docmdp_ok', 'bottom_line')}
    intact, valid = bool(status.intact), bool(status.valid)
    trusted = bool(status.trusted) if trusted_override is None else trusted_override
    coverage = getattr(status, 'coverage', None)
    mod_level = getattr(status, 'modification_level', None)
    docmdp_ok = getattr(status, 'docmdp_ok', None)
    if hasattr(status, 'seed_value_ok'):  # PdfSignatureStatus: pyHanko's own bottom line
        bottom_line = bool(status.bottom_line) and (trusted_override is not False)
    else:  # a document time-stamp has none; the same judgement
        bottom_line = intact and valid and trusted and (docmdp_ok is not False)
    diff = getattr(status, 'diff_result', None)
    out = {
        'intact': intact,
        'valid': valid,
        'trusted': trusted,
        'revoked': bool(status.revoked),
        'coverage': enum_name(coverage),
        'modification_level': enum_name(mod_level),
        'docmdp_ok': docmdp_ok,
        'bottom_line': bool(bottom_line),
        'signer': cert_summary(status.signing_cert),
        'trust_anchor': status.validation_path[0].subject.human_friendly if status.validation_path is not None else None,
        'md_algorithm': status.md_algorithm,
        'signature_mechanism': status.pkcs7_signature_mechanism,
    }
    if diff is not None and not isinstance(diff, DiffResult):
        out['modification_detail'] = short(diff)
    if status.revocation_details is not None:
        rd = status.revocation_details
        out['revocation'] = {'ca': rd.ca_revoked, 'reason': enum_name(rd.revocation_reason), 'date': iso(rd.revocation_date)}
    return out


def acceptable_coverage(fields: dict) -> bool:
    # After the signed revision: nothing, or revisions pyHanko's difference analysis reads as LTA updates (validation
    # data, document time-stamps). ENTIRE_REVISION with NONE means bytes after it that are no revision at all (a
    # truncated update, say): pyHanko reads past them, we do not accept them.
    return fields['coverage'] == 'ENTIRE_FILE' or (fields['coverage'] == 'ENTIRE_REVISION' and fields['modification_level'] == 'LTA_UPDATES')


def problems_of(entry: dict) -> list[str]:
    """Why a signature is not acceptable: every check, not the first failing one."""
    p = []
    if entry['intact'] is False:
        p.append('not intact (the signed bytes do not match)')
    if entry['valid'] is False:
        p.append('the signature value does not verify')
    if entry['intact'] and entry['valid'] and entry['trusted'] is False:
        p.append('not trusted' + (' (revoked)' if entry['revoked'] else ''))
    if entry['intact'] is None:
        p.append('no status from pyHanko')
    if entry['coverage'] is not None and not acceptable_coverage(entry):
        if entry['coverage'] != 'ENTIRE_REVISION':
            p.append(f"coverage {entry['coverage']}")
        else:
            detail = entry.get('modification_detail')
            if entry['modification_level'] == 'NONE':
                p.append('bytes after the signed revision that are no revision pyHanko reads (modification level NONE)')
            else:
                p.append(f"modified after signing: {entry['modification_level']}" + (f' ({detail})' if detail else ''))
    if entry['docmdp_ok'] is False:
        p.append('modifications not allowed by the document modification policy')
    if entry['indication'] != 'TOTAL_PASSED':
        p.append(
            f"AdES {entry['indication']}"
            + (f"/{entry['sub_indication']}" if entry['sub_indication'] else '')
            + (f": {entry['failure_message']}" if entry.get('failure_message') else '')
        )
    ts = entry.get('signature_timestamp')
    if ts is not None and ts['indication'] != 'TOTAL_PASSED':
        p.append(f"signature time-stamp {ts['indication']}" + (f"/{ts['sub_indication']}" if ts['sub_indication'] else ''))
    return p


# ---------------------------------------------------------------- judging one file


class LogCollector(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        try:
            msg = record.getMessage().strip().replace('\n', ' ')
        except Exception:  # noqa: BLE001
            msg = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            msg += f' [{short(record.exc_info[1], 200)}]'
        line = f'{record.levelname} {record.name}: {msg}'
        if line not in self.messages and len(self.messages) < 30:
            self.messages.append(line)


_poe_index_of = ades._build_prima_facie_poe_index_from_pdf_timestamps


def _poe_index_once(r, include_content_ts, diff_policy):
    # ades_lta_validation gathers the document time-stamps' proofs of existence (and runs the difference analysis of
    # every signature) each time it is called; they depend on the file alone, so each file does it once.
    key = (include_content_ts, id(diff_policy))
    cache = r.__dict__.setdefault('_pyhanko_batch_poe_index', {})
    if key not in cache:
        cache[key] = _poe_index_of(r, include_content_ts, diff_policy)
    return list(cache[key])


ades._build_prima_facie_poe_index_from_pdf_timestamps = _poe_index_once


def dss_knowledge(reader: PdfFileReader) -> LocalKnowledge:
    # What ades_lta_validation ingests for itself (ades._dss_to_local_knowledge): the final /DSS.
    return ades._dss_to_local_knowledge(reader=reader)


async def judge_document_timestamps(reader, embedded, spec: PdfSignatureValidationSpec, timing) -> dict[int, dict]:
    """
    Every document time-stamp, each with its own AdES result: at the validation time, and when that is
    INDETERMINATE by past validation with the later time-stamps' proofs of existence. This is
    ades._validate_prima_facie_poe, recording each result instead of stopping at the first failure.
    """
    sig_spec = spec.signature_validation_spec
    facts = dss_knowledge(reader)
    lk = sig_spec.local_knowledge
    sig_spec = dataclasses.replace(
        sig_spec,
        local_knowledge=LocalKnowledge(
            known_ocsps=lk.known_ocsps + facts.known_ocsps,
            known_crls=lk.known_crls + facts.known_crls,
            known_certs=lk.known_certs + facts.known_certs,
            known_poes=lk.known_poes,
            nonrevoked_assertions=lk.nonrevoked_assertions,
        ),
    )
    candidates = sorted(
        ades._build_prima_facie_poe_index_from_pdf_timestamps(reader, include_content_ts=True, diff_policy=spec.diff_policy),
        key=lambda p: p.pdf_revision,
    )
    results: dict[int, dict] = {}
    resulting = POEManager()
    sig_spec.local_knowledge.add_to_poe_manager(resulting)
    for ix, poe in enumerate(candidates):
        temporary = copy(resulting)
        if ix < len(candidates) - 1:
            candidates[ix + 1].add_to_poe_manager(temporary)
        handlers = bootstrap_validation_data_handlers(sig_spec, timing_info=timing, poe_manager_override=temporary)

        def imprint(algo, poe=poe):
            if algo != poe.doc_hash_algo:
                raise SignatureValidationError(f'message imprint algorithm {algo}, the document digest is {poe.doc_hash_algo}')
            return poe.doc_digest

        try:
            current = await ades.ades_timestamp_validation(
                tst_signed_data=poe.timestamp_token_signed_data,
                validation_spec=sig_spec,
                timing_info=timing,
                expected_tst_imprint=imprint,
                validation_data_handlers=handlers,
                extra_status_kwargs=poe.forensic_info,
                status_cls=DocumentTimestampStatus,
            )
            sub = current.ades_subindic
            record = {'result': current, 'sub': sub, 'past': None, 'time': poe.timestamp_dt}
            if sub.status == AdESStatus.PASSED:
                poe.add_to_poe_manager(resulting)
            elif sub.status == AdESStatus.INDETERMINATE:
                past = await ades.ades_past_signature_validation(
                    signed_data=poe.timestamp_token_signed_data,
                    validation_spec=sig_spec,
                    poe_manager=temporary,
                    current_time_sub_indic=sub,
                    init_control_time=timing.validation_time,
                )
                record['past'] = past
                if past.status == AdESStatus.PASSED:
                    poe.add_to_poe_manager(resulting)
        except RESOURCE_ERRORS:
            raise
        except Exception as e:  # noqa: BLE001  (this time-stamp is not judged; it proves nothing for the others)
            record = {'error': e}
        results[id(poe.timestamp_token_signed_data)] = record
    return {id(e.signed_data): results[id(e.signed_data)] for e in embedded if id(e.signed_data) in results}


async def judge_signature(emb: EmbeddedPdfSignature, spec, timing, doc_ts: dict, dss_present: bool, later_lta: set[int]) -> dict:
    sub_filter = str(emb.sig_object.get('/SubFilter', '')).lstrip('/') or None
    entry: dict = {
        'id': emb.field_name,
        'kind': 'document_timestamp' if emb.sig_object_type == '/DocTimeStamp' else 'signature',
        'sub_filter': sub_filter,
        'revision': emb.signed_revision,
    }
    if entry['kind'] == 'document_timestamp':
        record = doc_ts.get(id(emb.signed_data))
        if record is None:
            # Not part of pyHanko's evidence record (it covers less than a whole revision): judged alone.
            emb.compute_integrity_info(spec.diff_policy)
            digest = emb.compute_digest()
            result = await ades.ades_timestamp_validation(
                tst_signed_data=emb.signed_data,
                validation_spec=spec.signature_validation_spec,
                timing_info=timing,
                expected_tst_imprint=lambda algo: digest if algo == emb.external_md_algorithm else b'',
                extra_status_kwargs=emb.summarise_integrity_info(),
                status_cls=DocumentTimestampStatus,
            )
            record = {'result': result, 'sub': result.ades_subindic, 'past': None, 'time': None}
        if 'error' in record:
            raise record['error']
        result, sub, past = record['result'], record['sub'], record['past']
        passed_in_past = past is not None and past.status == AdESStatus.PASSED
        final = past if passed_in_past else sub
        entry.update(status_fields(result.api_status, trusted_override=True if passed_in_past else None))
        entry['indication'], entry['sub_indication'] = indication_of(final)
        entry['failure_message'] = result.failure_msg
        entry['validation'] = 'past validation' if passed_in_past else 'at the validation time'
        if past is not None and not passed_in_past:
            entry['past_validation'] = past.standard_name
        tst_time = record['time'] or getattr(result.api_status, 'timestamp', None)
        entry['timestamp_time'] = iso(tst_time)
        entry['level'] = None
    else:
        result = await ades.ades_lta_validation(emb, spec, timing_info=timing)
        entry.update(status_fields(result.api_status))
        entry['indication'], entry['sub_indication'] = indication_of(result.ades_subindic)
        # pyHanko words a pass that past validation could not improve on as a "failure message": keep it as a note.
        passed = entry['indication'] == 'TOTAL_PASSED'
        entry['failure_message'] = None if passed else result.failure_msg
        entry['note'] = result.failure_msg if passed else None
        entry['signing_time_claimed'] = iso(emb.self_reported_timestamp)
        entry['best_signature_time'] = iso(result.best_signature_time)
        entry['oldest_evidence_record_timestamp'] = iso(result.oldest_evidence_record_timestamp)
        has_sig_ts = any(True for _ in find_cms_attribute_iter(emb.signer_info['unsigned_attrs'], 'signature_time_stamp'))
        ts = result.signature_timestamp_status
        if ts is not None:
            ts_ind, ts_sub = indication_of(ts.ades_subindic)
            entry['signature_timestamp'] = {
                'indication': ts_ind,
                'sub_indication': ts_sub,
                'time': iso(getattr(ts.api_status, 'timestamp', None)),
                'authority': cert_summary(getattr(ts.api_status, 'signing_cert', None)),
                'trusted': bool(ts.api_status.trusted) if ts.api_status is not None else None,
            }
        elif has_sig_ts:
            # pyHanko keeps only a time-stamp that passed; none did (or validation stopped before it).
            entry['signature_timestamp'] = {'indication': 'INDETERMINATE', 'sub_indication': None, 'time': None, 'authority': None, 'trusted': None}
        else:
            entry['signature_timestamp'] = None
        # The PAdES baseline level, as far as the file's structure and pyHanko's results show it.
        if sub_filter == 'ETSI.CAdES.detached':
            level = 'B-B'
            if ts is not None and entry['signature_timestamp']['indication'] == 'TOTAL_PASSED':
                level = 'B-T'
                if dss_present:
                    level = 'B-LT'
                    if any(r > emb.signed_revision for r in later_lta):
                        level = 'B-LTA'
            entry['level'] = level
        else:
            entry['level'] = None
    entry['problems'] = problems_of(entry)
    entry['acceptable'] = not entry['problems']
    return entry


def judge_file(path: str, spec, at: datetime | None) -> dict:
    started = time.monotonic()
    verdict: dict = {'file': path, 'name': os.path.basename(path)}
    collector = LogCollector()
    root = logging.getLogger()
    root.addHandler(collector)
    try:
        timing = ValidationTimingInfo(at, at, point_in_time_validation=True) if at else ValidationTimingInfo.now()
        verdict['validation_time'] = iso(timing.validation_time)
        try:
            with open(path, 'rb') as f:
                data = f.read()
            verdict['bytes'] = len(data)
            verdict['sha256'] = hashlib.sha256(data).hexdigest()
            reader = PdfFileReader(io.BytesIO(data), strict=True)
            sh = reader.security_handler
            if isinstance(sh, crypt.StandardSecurityHandler):
                if reader.decrypt('').status == crypt.AuthStatus.FAILED:
                    raise ValueError('encrypted with a password')
            elif sh is not None:
                raise ValueError(f'encrypted ({type(sh).__name__})')
            fields = list(enumerate_sig_fields(reader, filled_status=True))
        except Exception as e:  # noqa: BLE001
            return refuse(verdict, short(e))

        signatures, embedded = [], []
        for fq_name, sig_obj, sig_field in fields:
            kind = 'signature'
            try:
                sig_dict = sig_obj.get_object()
                kind = 'document_timestamp' if sig_dict.get('/Type', None) == '/DocTimeStamp' else 'signature'
                sub_filter = sig_dict.get('/SubFilter', None)
                if str(sub_filter) not in SUPPORTED_SUBFILTERS:
                    raise ValueError(f'unsupported /SubFilter {sub_filter}')
                embedded.append(EmbeddedPdfSignature(reader, sig_field, fq_name))
            except RESOURCE_ERRORS:
                raise
            except Exception as e:  # noqa: BLE001
                signatures.append(unreadable(fq_name, short(e)))
                signatures[-1]['kind'] = kind
        embedded.sort(key=lambda emb: emb.signed_revision)
        # pyHanko's evidence-record code enumerates the signatures itself; give it the readable ones, so one
        # malformed field (already judged above) does not stop the others from being judged.
        reader._embedded_signatures = embedded

        try:
            DocumentSecurityStore.read_dss(reader)
            dss_present = True
        except NoDSSFoundError:
            dss_present = False
        except RESOURCE_ERRORS:
            raise
        except Exception as e:  # noqa: BLE001
            dss_present = False
            signatures.append(unreadable('/DSS', short(e)))

        doc_ts: dict = {}
        doc_ts_error = None
        if any(e.sig_object_type == '/DocTimeStamp' for e in embedded):
            try:
                doc_ts = asyncio.run(judge_document_timestamps(reader, embedded, spec, timing))
            except RESOURCE_ERRORS:
                raise
            except Exception as e:  # noqa: BLE001
                doc_ts_error = short(e)
        passed_lta = {
            e.signed_revision
            for e in embedded
            if e.sig_object_type == '/DocTimeStamp'
            and id(e.signed_data) in doc_ts
            and 'error' not in doc_ts[id(e.signed_data)]
            and (
                doc_ts[id(e.signed_data)]['sub'].status == AdESStatus.PASSED
                or (doc_ts[id(e.signed_data)]['past'] is not None and doc_ts[id(e.signed_data)]['past'].status == AdESStatus.PASSED)
            )
        }
        for emb in embedded:
            try:
                if emb.sig_object_type == '/DocTimeStamp' and doc_ts_error is not None:
                    raise RuntimeError(f'the document time-stamp chain could not be evaluated: {doc_ts_error}')
                signatures.append(asyncio.run(judge_signature(emb, spec, timing, doc_ts, dss_present, passed_lta)))
            except RESOURCE_ERRORS:
                raise
            except Exception as e:  # noqa: BLE001
                sub = getattr(e, 'ades_subindication', None)
                entry = unreadable(emb.field_name, short(e), 'ERROR' if sub is None else indication_of(sub)[0], None if sub is None else sub.standard_name)
                entry['kind'] = 'document_timestamp' if emb.sig_object_type == '/DocTimeStamp' else 'signature'
                entry['revision'] = emb.signed_revision
                signatures.append(entry)

        order = {id(s): i for i, s in enumerate(signatures)}
        signatures.sort(key=lambda s: (s.get('revision') is None, s.get('revision') or 0, order[id(s)]))
        verdict['signatures'] = signatures
        verdict['dss'] = dss_present
        if not signatures:
            verdict.update(verdict='unsigned', accepted=False, indication='NO_SIGNATURE', sub_indication=None, error=None)
            verdict['reasons'] = ['no signature']
        else:
            worst = min(signatures, key=lambda s: SEVERITY.index(s['indication']))
            accepted = all(s['acceptable'] for s in signatures) and any(s['kind'] == 'signature' for s in signatures)
            reasons = [f"{s['id']}: {p}" for s in signatures for p in s['problems']]
            if not any(s['kind'] == 'signature' for s in signatures):
                reasons.append('only document time-stamps, no signature')
            verdict.update(
                verdict='accepted' if accepted else 'rejected',
                accepted=accepted,
                indication=worst['indication'],
                sub_indication=worst['sub_indication'],
                error=None,
                reasons=reasons,
            )
        return verdict
    except Exception as e:  # noqa: BLE001  (a bug of ours, or pyHanko's, or a resource limit: still a verdict)
        if not isinstance(e, RESOURCE_ERRORS):
            print(f'pyhanko_batch: {path}:', file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
        return refuse(verdict, short(e))
    finally:
        root.removeHandler(collector)
        verdict['log'] = collector.messages
        verdict['seconds'] = round(time.monotonic() - started, 3)


def unreadable(name: str, reason: str, indication: str = 'TOTAL_FAILED', sub_indication: str | None = 'FORMAT_FAILURE') -> dict:
    entry = {'id': name, 'kind': 'signature', 'sub_filter': None, 'revision': None}
    entry.update(status_fields(None))
    entry.update(indication=indication, sub_indication=sub_indication, failure_message=reason, level=None)
    entry['problems'] = [f'cannot be judged: {reason}']
    entry['acceptable'] = False
    return entry


def refuse(verdict: dict, reason: str) -> dict:
    verdict.update(
        verdict=f'refused: {reason}',
        accepted=False,
        indication='ERROR',
        sub_indication=None,
        error=reason,
        reasons=[f'refused: {reason}'],
        signatures=[],
    )
    return verdict


# ---------------------------------------------------------------- the batch


def worker(conn, spec, at, memory_mb):
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        if item is None:
            return
        try:
            result = judge_file(item, spec, at)
        except BaseException as e:  # noqa: BLE001  (MemoryError, RecursionError...)
            result = refuse({'file': item, 'name': os.path.basename(item)}, short(e))
        conn.send(json.dumps(result, default=str))


class Worker:
    def __init__(self, ctx, spec, at, memory_mb):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker, args=(child, spec, at, memory_mb), daemon=True)
        self.proc.start()
        child.close()

    def stop(self, kill=False):
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def main() -> int:
    logging.basicConfig(level=logging.WARNING, handlers=[logging.NullHandler()])
    logging.getLogger().setLevel(logging.WARNING)
    job = read_job()
    files = list(job['files'])
    at = parse_time(job.get('at'))
    spec = build_spec(job['trust'], job.get('revocation') or 'require')
    timeout = float(job.get('timeout') or 60)
    memory_mb = int(job.get('memory_mb') if job.get('memory_mb') is not None else 2048)

    ctx = multiprocessing.get_context('fork')
    started = time.monotonic()
    w = None
    out = sys.stdout
    try:
        for path in files:
            if w is None:
                w = Worker(ctx, spec, at, memory_mb)
            t0 = time.monotonic()
            line = None
            try:
                w.conn.send(path)
                if w.conn.poll(timeout):
                    line = w.conn.recv()
                    json.loads(line)
                else:
                    reason = f'timed out after {timeout:g} s'
            except (EOFError, OSError, ValueError) as e:
                reason = f'the worker died ({w.proc.exitcode if not w.proc.is_alive() else short(e)})'
            if line is None:
                w.stop(kill=True)
                w = None
                verdict = refuse({'file': path, 'name': os.path.basename(path)}, reason)
                verdict.update(log=[], seconds=round(time.monotonic() - t0, 3))
                line = json.dumps(verdict)
            out.write(line + '\n')
            out.flush()
    finally:
        if w is not None:
            w.stop()
    print(f'pyhanko_batch: {len(files)} files in {time.monotonic() - started:.2f} s', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
