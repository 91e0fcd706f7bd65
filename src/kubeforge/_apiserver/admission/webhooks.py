"""Mutating and validating admission webhooks: which to call and what their answers do.

Follows k8s.io/apiserver pkg/admission/plugin/webhook: generic/webhook.go (ShouldCallHook),
mutating/dispatcher.go (in order, JSON patches applied and the object decoded and defaulted
again, reinvocation once with reinvocationPolicy IfNeeded), validating/dispatcher.go (all
matching webhooks at once, the first error returned), errors/statuserror.go (denials).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from kubeforge._apiserver.admission.attributes import Attributes
from kubeforge._apiserver.admission.expressions import Authorize, Conditions, Context
from kubeforge._apiserver.admission.matching import Match, Matcher, Rule, Selector
from kubeforge._apiserver.admission.review import REVIEW_VERSIONS, read_answer, review_request
from kubeforge._apiserver.request.errors import StatusError
from kubeforge._apiserver.storage import patch as patching
from kubeforge._apiserver.types.admissioncel import WEBHOOK_VARIABLES
from kubeforge._apiserver.types.resource import ResourceType
from kubeforge._apiserver.webhookclient.client import CallFailed, ClientConfig, WebhookClient

__all__ = [
    "Environment",
    "Webhook",
    "denial",
    "dispatch_mutating",
    "dispatch_validating",
    "internal_error",
    "parse_webhooks",
]

log = logging.getLogger("kubeforge.apiserver.admission")

_NO_SIDE_EFFECTS = ("None", "NoneOnDryRun")


class Environment(Protocol):
    """What webhooks need from the server."""

    client: WebhookClient
    authorize: Authorize

    def equivalents(self, rt: ResourceType, subresource: str) -> list[ResourceType]: ...

    def namespace_labels(self, name: str) -> dict[str, str] | None: ...

    async def convert(
        self, obj: dict[str, Any], source: ResourceType, target: ResourceType
    ) -> dict[str, Any]: ...

    def redecode(self, rt: ResourceType, obj: dict[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class Webhook:
    """One webhook of a Mutating- or ValidatingWebhookConfiguration, ready to match."""

    name: str
    configuration: str
    uid: str
    mutating: bool
    matcher: Matcher
    namespace_selector: Selector
    object_selector: Selector
    conditions: Conditions
    client: ClientConfig
    timeout: int
    failure_policy: str
    side_effects: str | None
    reinvoke: bool
    review_version: str | None


def parse_webhooks(config: Mapping[str, Any], mutating: bool) -> list[Webhook]:
    """The webhooks of one (defaulted, validated) configuration object, in their order."""
    name = str((config.get("metadata") or {}).get("name") or "")
    hooks = []
    for index, raw in enumerate(config.get("webhooks") or ()):
        if not isinstance(raw, Mapping):
            continue
        versions = [str(v) for v in raw.get("admissionReviewVersions") or ()]
        timeout = raw.get("timeoutSeconds")
        hooks.append(
            Webhook(
                name=str(raw.get("name") or ""),
                configuration=name,
                uid=f"{name}/{index}",
                mutating=mutating,
                matcher=Matcher(
                    [Rule.parse(r) for r in raw.get("rules") or ()],
                    equivalent=raw.get("matchPolicy", "Equivalent") == "Equivalent",
                ),
                namespace_selector=Selector.parse(raw.get("namespaceSelector")),
                object_selector=Selector.parse(raw.get("objectSelector")),
                conditions=Conditions(raw.get("matchConditions"), WEBHOOK_VARIABLES),
                client=ClientConfig.parse(raw.get("clientConfig")),
                timeout=timeout if isinstance(timeout, int) and 1 <= timeout <= 30 else 10,
                failure_policy=str(raw.get("failurePolicy") or "Fail"),
                side_effects=raw.get("sideEffects"),
                reinvoke=mutating and raw.get("reinvocationPolicy") == "IfNeeded",
                review_version=next((v for v in versions if v in REVIEW_VERSIONS), None),
            )
        )
    return hooks


def internal_error(message: str) -> StatusError:
    """apierrors.NewInternalError: a 500 carrying the cause."""
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def denial(webhook: str, result: Mapping[str, Any] | None) -> StatusError:
    """A webhook's refusal (webhook/errors ToStatusErr): its status, with the message saying
    which webhook denied the request; codes below 400 become 400."""
    result = result or {}
    code = result.get("code")
    if not isinstance(code, int) or isinstance(code, bool) or code < 400:
        code = 400
    lead = f'admission webhook "{webhook}" denied the request'
    message = result.get("message")
    reason = result.get("reason")
    if isinstance(message, str) and message:
        text = f"{lead}: {message}"
    elif isinstance(reason, str) and reason:
        text = f"{lead}: {reason}"
    else:
        text = f"{lead} without explanation"
    details = result.get("details")
    return StatusError(
        code,
        reason if isinstance(reason, str) else "",
        text,
        details if isinstance(details, dict) and details else None,
    )


def _aggregate(errors: list[str]) -> str:
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


async def _versioned(
    env: Environment, attrs: Attributes, match: Match
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The request's objects in the version the rule matched."""
    if match.rt is attrs.rt or match.kind == attrs.kind:
        return attrs.object, attrs.old_object
    return (
        None if attrs.object is None else await env.convert(attrs.object, attrs.rt, match.rt),
        None
        if attrs.old_object is None
        else await env.convert(attrs.old_object, attrs.rt, match.rt),
    )


async def should_call(env: Environment, hook: Webhook, attrs: Attributes) -> Match | None:
    """Whether `hook` applies: rules (and equivalents), selectors, then matchConditions; a
    failing condition under failurePolicy Fail refuses the request (403)."""
    match = hook.matcher.match(attrs, env.equivalents)
    if match is None:
        return None
    if not hook.namespace_selector.matches_namespace(attrs, env.namespace_labels):
        return None
    if not hook.object_selector.matches_object(attrs):
        return None
    if hook.conditions:
        obj, old = await _versioned(env, attrs, match)
        matched, errors = hook.conditions.evaluate(Context(attrs, match, obj, old, env.authorize))
        if not matched:
            return None
        if errors:
            if hook.failure_policy == "Ignore":
                return None
            raise StatusError.forbidden(
                attrs.rt.group, attrs.rt.plural, attrs.name, _aggregate(errors)
            )
    return match


async def _call(
    env: Environment,
    hook: Webhook,
    attrs: Attributes,
    match: Match,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    warn: Callable[[str], None],
) -> Any:
    if attrs.dry_run:
        if hook.side_effects is None:
            raise CallFailed("Webhook SideEffects is nil")
        if hook.side_effects not in _NO_SIDE_EFFECTS:
            raise StatusError.bad_request(
                f'admission webhook "{hook.name}" does not support dry run'
            )
    if hook.review_version is None:
        raise CallFailed(
            "could not create admission objects: webhook does not accept known AdmissionReview "
            "versions (v1, v1beta1)"
        )
    uid = str(uuid.uuid4())
    body = review_request(hook.review_version, uid, attrs, match, obj, old)
    reply = await env.client.post(hook.client, body, hook.timeout)
    answer = read_answer(reply, hook.review_version, uid, hook.mutating)
    for text in answer.warnings:
        warn(text)
    if not answer.allowed:
        raise denial(hook.name, answer.result)
    return answer


def _failed(hook: Webhook, exc: CallFailed) -> StatusError | None:
    """failurePolicy: Ignore goes on (None), Fail refuses with a 500."""
    message = f'failed calling webhook "{hook.name}": {exc}'
    if hook.failure_policy == "Ignore":
        log.warning("failed calling webhook, failing open %s: %s", hook.name, message)
        return None
    return internal_error(message)


async def _mutate_one(
    env: Environment,
    hook: Webhook,
    match: Match,
    attrs: Attributes,
    warn: Callable[[str], None],
) -> bool:
    """Call one mutating webhook and apply its patch to `attrs.object`; whether it changed."""
    obj, old = await _versioned(env, attrs, match)
    answer = await _call(env, hook, attrs, match, obj, old, warn)
    if answer.patch is None:
        return False
    try:
        operations = orjson.loads(answer.patch)
    except orjson.JSONDecodeError as exc:
        raise internal_error(str(exc)) from None
    if not isinstance(operations, list):
        raise internal_error("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if not operations:
        return False
    if obj is None:
        raise internal_error(
            f'admission webhook "{hook.name}" attempted to modify the object, which is not '
            "supported for this operation"
        )
    if answer.patch_type != "JSONPatch":
        raise CallFailed(f'unsupported patch type "{answer.patch_type}"')
    try:
        patched = patching.apply_json_patch(obj, operations)
    except (patching.PatchError, patching.PatchTooLarge) as exc:
        raise internal_error(str(exc)) from None
    if not isinstance(patched, dict):
        raise internal_error("the patched object is not a JSON object")
    if patched.get("apiVersion") != obj.get("apiVersion") or patched.get("kind") != obj.get("kind"):
        raise internal_error(
            f'admission webhook "{hook.name}" changed the object\'s apiVersion or kind'
        )
    if match.kind == (match.rt.group, match.rt.version, match.rt.kind):
        env.redecode(match.rt, patched)
    changed = patched != obj
    if match.rt is not attrs.rt and match.kind != attrs.kind:
        patched = await env.convert(patched, match.rt, attrs.rt)
    attrs.object = patched
    return changed


async def dispatch_mutating(
    env: Environment,
    hooks: tuple[Webhook, ...],
    attrs: Attributes,
    warn: Callable[[str], None],
) -> None:
    """Call the matching mutating webhooks in order; `attrs.object` becomes the result."""
    previously: set[str] = set()
    reinvoke: set[str] = set()
    again = False
    for round_ in (0, 1):
        if round_ == 1 and not again:
            return
        for hook in hooks:
            match = await should_call(env, hook, attrs)
            if match is None:
                continue
            # A webhook not called in the first round is not called in the second.
            if round_ == 1 and hook.uid not in reinvoke:
                continue
            try:
                changed = await _mutate_one(env, hook, match, attrs, warn)
            except CallFailed as exc:
                error = _failed(hook, exc)
                if error is not None:
                    raise error from None
                changed = False
            if changed:
                reinvoke |= previously
                previously = set()
                again = True
            if hook.reinvoke:
                previously.add(hook.uid)


async def dispatch_validating(
    env: Environment,
    hooks: tuple[Webhook, ...],
    attrs: Attributes,
    warn: Callable[[str], None],
) -> None:
    """Call the matching validating webhooks at once; the first refusal to arrive wins."""
    calls = []
    for hook in hooks:
        match = await should_call(env, hook, attrs)
        if match is not None:
            calls.append((hook, match))
    if not calls:
        return

    async def one(hook: Webhook, match: Match) -> StatusError | None:
        try:
            obj, old = await _versioned(env, attrs, match)
            await _call(env, hook, attrs, match, obj, old, warn)
        except CallFailed as exc:
            return _failed(hook, exc)
        except StatusError as exc:
            return exc
        return None

    if len(calls) == 1:
        error = await one(*calls[0])
        if error is not None:
            raise error
        return
    first: StatusError | None = None
    for done in asyncio.as_completed([one(hook, match) for hook, match in calls]):
        error = await done
        if error is not None and first is None:
            first = error
    if first is not None:
        raise first
