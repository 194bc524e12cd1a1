"""A pod's volume sources as ValidateVolumes sees them (part of ``api-validation``).

Sources (kubernetes/kubernetes, pkg/apis/core/validation/validation.go):

- one source per volume (validateVolumeSource: "may not specify more than 1 volume type"); a volume with none is
  not judged, as the v1 defaults make it an emptyDir (SetDefaults_Volume);
- an emptyDir sizeLimit a quantity that is not negative (validateVolumeSource: "SizeLimit field must be a valid
  resource quantity");
- configMap, secret, downwardAPI and projected ``defaultMode`` and each item's ``mode`` in 0-0777
  (validateConfigMapVolumeSource, validateSecretVolumeSource, validateProjectedVolumeSource, validateKeyToPathList:
  "must be a number between 0 and 0777 (octal), both inclusive"): a Python ``0o644`` is 420, and a written ``644``
  is 01204, which the server refuses;
- items' paths relative, with no '..' element and not starting '..' (validateKeyToPathList with
  validateLocalNonReservedPath and validateLocalDescendingPath), and a key given;
- a projected volume's sources (validateProjectionSources): one source type per entry ("may not specify more than 1
  volume type"); a serviceAccountToken's ``expirationSeconds`` at least 600 and at most 2^32 after the v1 default of
  3600 (SetDefaults_ServiceAccountTokenProjection): "may not specify a duration less than 10 minutes" /
  "larger than 2^32 seconds"; its ``path`` given ("projected.path: Required value") and local
  (ValidateLocalNonReservedPath); a secret's or configMap's ``name`` given; no two items of the secret, configMap
  and downwardAPI sources (and clusterTrustBundle paths) at one path ("conflicting duplicate paths": the token's
  own path is not counted there). The ``audience`` is not validated (any string, the API server's own by default).
- a secret volume's ``secretName``, a configMap volume's ``name`` and a persistentVolumeClaim volume's
  ``claimName`` not empty (validateSecretVolumeSource, validateConfigMapVolumeSource,
  validatePersistentClaimVolumeSource: "Required value"). Only an empty string is judged: the render leaves out a
  value unknown until apply (a ConfigMap's generated name, held-out set 28's correct archiver), so an absent name
  cannot be told from a name known later;
- a hostPath ``type`` among "", DirectoryOrCreate, Directory, FileOrCreate, File, Socket, CharDevice,
  BlockDevice, case and all (validateHostPathType: "Unsupported value"); its ``path`` written non-empty
  (validateHostPathVolumeSource: "hostPath.path: Required value") and without a '..' element
  (validatePathNoBacksteps: "must not contain '..'");
- an nfs volume's ``server`` and ``path`` written non-empty and the path absolute (validateNFSVolumeSource: "must
  be an absolute path"); a csi volume's ``driver`` and its nodePublishSecretRef's ``name`` written non-empty
  (validateCSIVolumeSource: "Required value");
- an ephemeral volume's ``volumeClaimTemplate.spec`` held to ValidatePersistentVolumeClaimSpec
  (validateEphemeralVolumeSource, ValidatePersistentVolumeClaimTemplate), by ``storage_validation.claim_spec``;
- an ephemeral volume's ``volumeClaimTemplate.metadata`` with labels and annotations only
  (ValidatePersistentVolumeClaimTemplate calls ValidateTemplateObjectMeta, whose allowedTemplateObjectMetaFields are
  Annotations and Labels: any other ObjectMeta field set is "Forbidden: cannot be set"); the claim is always named
  ``<pod>-<volume>`` (https://kubernetes.io/docs/concepts/storage/ephemeral-volumes/#persistentvolumeclaim-naming).
  A field left empty or null (``creationTimestamp: null``) is Go's zero value and passes;
- a downwardAPI file's fieldRef path (validateDownwardAPIVolumeFile) is ``downward_api_validation``'s.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import downward_api_validation, storage_validation
from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject
from tokenplane.proof.deployability.object_validation import rejected, unsupported

SOURCES = frozenset(
    {
        "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
        "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
        "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
        "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
    }
)  # fmt: skip
# The sources of one projected volume entry (core.VolumeProjection).
# The volume sources whose object is named by a field the server requires (Required value when empty):
# validateSecretVolumeSource, validateConfigMapVolumeSource, validatePersistentClaimVolumeSource.
NAMED_SOURCES = (
    ("secret", "secretName", "validateSecretVolumeSource"),
    ("configMap", "name", "validateConfigMapVolumeSource"),
    ("persistentVolumeClaim", "claimName", "validatePersistentClaimVolumeSource"),
)
# ObjectMeta's fields other than labels and annotations, by their JSON names: a claim template may set none of them
# (ValidateTemplateObjectMeta's allowedTemplateObjectMetaFields holds only Annotations and Labels).
TEMPLATE_META_FORBIDDEN = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences", "finalizers", "managedFields",
)  # fmt: skip
# supportedHostPathTypes (validateHostPathType), sorted as field.NotSupported lists them.
HOST_PATH_TYPES = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket")
PROJECTIONS = ("secret", "configMap", "downwardAPI", "serviceAccountToken", "clusterTrustBundle", "podCertificate")
TOKEN_DEFAULT_SECONDS = 3600  # SetDefaults_ServiceAccountTokenProjection
TOKEN_MIN_SECONDS = 600
TOKEN_MAX_SECONDS = 1 << 32
MODE_MAX = 0o777
MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"


def check(obj: KubeObject, where: str, volumes: list[Mapping[str, Any]]) -> Iterator[Finding]:
    for volume in volumes:
        at = f"{where}spec.volumes[{volume.get('name')}]"
        present = sorted(k for k in SOURCES if volume.get(k) is not None)
        if len(present) > 1:
            yield rejected(
                obj,
                f"has {at} with {' and '.join(present)}",
                "validateVolumeSource: Forbidden: may not specify more than 1 volume type",
                "give each volume one source; mount several with a projected volume or as several volumes",
            )
        empty = volume.get("emptyDir")
        if isinstance(empty, dict) and empty.get("sizeLimit") is not None:
            size = syntax.parse_quantity(empty["sizeLimit"])
            if size is None or size < 0:
                yield rejected(
                    obj,
                    f"has {at}.emptyDir.sizeLimit {empty['sizeLimit']!r}",
                    "validateVolumeSource: SizeLimit field must be a valid resource quantity",
                    "write a non-negative quantity such as 10Gi",
                )
        host_path = volume.get("hostPath")
        kind_of_path = host_path.get("type") if isinstance(host_path, dict) else None
        if isinstance(kind_of_path, str) and kind_of_path not in HOST_PATH_TYPES:
            yield unsupported(
                obj,
                f"{at}.hostPath.type",
                kind_of_path,
                HOST_PATH_TYPES,
                "validateHostPathType",
                "write the type as the API spells it (case matters, e.g. Directory, DirectoryOrCreate), or drop it",
            )
        path = host_path.get("path") if isinstance(host_path, dict) else None
        if path == "" or (isinstance(path, str) and ".." in path.split("/")):
            yield rejected(
                obj,
                f"has {at}.hostPath.path {path!r}",
                f"validateHostPathVolumeSource: {at}.hostPath.path: "
                + ("Required value" if path == "" else f"Invalid value: \"{path}\": must not contain '..'"),
                "give the host directory's absolute path, without '..' (e.g. /var/log)",
            )
        yield from _network_sources(obj, at, volume)
        template = volume.get("ephemeral")
        template = template.get("volumeClaimTemplate") if isinstance(template, dict) else None
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            yield from storage_validation.claim_spec(obj, f"{at}.ephemeral.volumeClaimTemplate.spec", template["spec"])
        if isinstance(template, dict) and isinstance(template.get("metadata"), dict):
            yield from _claim_template_meta(obj, f"{at}.ephemeral.volumeClaimTemplate.metadata", template["metadata"])
        for kind, field, function in NAMED_SOURCES:
            source = volume.get(kind)
            # Only an empty name is judged: the render leaves out a value unknown until apply (another object's
            # generated name), so an absent one may be known later (an absent claimName is the schema's).
            value = source.get(field) if isinstance(source, dict) else 0
            if value == "":
                yield rejected(
                    obj,
                    f"has {at}.{kind} without a {field}",
                    f"{function}: {at}.{kind}.{field}: Required value",
                    f"set {kind}.{field} to the object's name"
                    + (" (a secret volume names it secretName, not name)" if kind == "secret" else ""),
                )
        for kind in ("configMap", "secret", "downwardAPI", "projected"):
            source = volume.get(kind)
            if isinstance(source, dict):
                yield from _mode(obj, f"{at}.{kind}.defaultMode", source.get("defaultMode"))
                yield from _items(obj, f"{at}.{kind}", source.get("items"), keyed=kind != "downwardAPI")
                if kind == "downwardAPI":
                    yield from downward_api_validation.check_volume_items(obj, f"{at}.{kind}", source.get("items"))
        projected = volume.get("projected")
        sources = projected.get("sources") if isinstance(projected, dict) else None
        for i, part in enumerate(sources if isinstance(sources, list) else []):
            for kind in ("configMap", "secret", "downwardAPI"):
                if isinstance(part, dict) and isinstance(part.get(kind), dict):
                    where_part = f"{at}.projected.sources[{i}].{kind}"
                    yield from _items(obj, where_part, part[kind].get("items"), keyed=kind != "downwardAPI")
                    if kind == "downwardAPI":
                        yield from downward_api_validation.check_volume_items(obj, where_part, part[kind].get("items"))
        if isinstance(sources, list):
            yield from _projection(obj, f"{at}.projected", [p for p in sources if isinstance(p, dict)])


def _claim_template_meta(obj: KubeObject, at: str, metadata: Mapping[str, Any]) -> Iterator[Finding]:
    """ValidateTemplateObjectMeta: a claim template's metadata holds labels and annotations, nothing else."""
    for field in TEMPLATE_META_FORBIDDEN:
        value = metadata.get(field)
        if value in (None, "", 0, [], {}):
            continue  # Go's zero value: validateFieldAllowList does not see it
        named = field in ("name", "generateName")
        yield rejected(
            obj,
            f"has {at}.{field} {value!r}",
            f"ValidatePersistentVolumeClaimTemplate/ValidateTemplateObjectMeta: {at}.{field}: Forbidden: cannot be "
            "set (a claim template's metadata may carry only labels and annotations)",
            f"drop volumeClaimTemplate.metadata.{field}"
            + (
                ": the ephemeral claim is always named <pod name>-<volume name>, so name the volume instead"
                if named
                else " and keep only labels and annotations there"
            ),
        )


def _network_sources(obj: KubeObject, at: str, volume: Mapping[str, Any]) -> Iterator[Finding]:
    nfs, csi = volume.get("nfs"), volume.get("csi")
    empty: list[tuple[str, str]] = []
    if isinstance(nfs, dict):
        empty += [(f"nfs.{f}", "validateNFSVolumeSource") for f in ("server", "path") if nfs.get(f) == ""]
        path = nfs.get("path")
        if isinstance(path, str) and path and not path.startswith("/"):
            yield rejected(
                obj,
                f"has {at}.nfs.path {path!r}",
                f'validateNFSVolumeSource: {at}.nfs.path: Invalid value: "{path}": must be an absolute path',
                "write the export's absolute path on the server, e.g. / for an EFS file system",
            )
    if isinstance(csi, dict):
        empty += [("csi.driver", "validateCSIVolumeSource")] if csi.get("driver") == "" else []
        secret = csi.get("nodePublishSecretRef")
        if isinstance(secret, dict) and secret.get("name") == "":
            empty.append(("csi.nodePublishSecretRef.name", "validateCSIVolumeSource"))
    for field, source in empty:
        yield rejected(
            obj,
            f"has {at}.{field} empty",
            f"{source}: {at}.{field}: Required value",
            f"set {field} (a config value that resolved empty leaves it so)",
        )


def _projection(obj: KubeObject, at: str, sources: list[Mapping[str, Any]]) -> Iterator[Finding]:
    """validateProjectionSources on one projected volume's sources."""
    seen: set[str] = set()
    for i, source in enumerate(sources):
        where = f"{at}.sources[{i}]"
        kinds = sorted(k for k in PROJECTIONS if source.get(k) is not None)
        if len(kinds) > 1:
            yield rejected(
                obj,
                f"has {where} with {' and '.join(kinds)}",
                f"validateProjectionSources: {where}: Forbidden: may not specify more than 1 volume type",
                "give each entry of sources one source (a list entry each)",
            )
        for kind in ("secret", "configMap"):
            part = source.get(kind)
            if isinstance(part, dict) and part.get("name") == "":  # absent: unknown until apply, not judged
                yield rejected(
                    obj,
                    f"has {where}.{kind} without a name",
                    f"validateProjectionSources: {where}.{kind}.name: Required value",
                    f"name the {kind} to project",
                )
        paths = [
            item.get("path")
            for kind in ("secret", "configMap", "downwardAPI")
            if isinstance(source.get(kind), dict)
            for item in source[kind].get("items") or []
            if isinstance(item, dict)
        ]
        bundle = source.get("clusterTrustBundle")
        if isinstance(bundle, dict):
            paths.append(bundle.get("path"))
        for path in paths:
            if not isinstance(path, str) or not path:
                continue
            if path in seen:
                yield rejected(
                    obj,
                    f"projects two files at {path!r} in {at}",
                    f"validateProjectionSources: {at}: Invalid value: conflicting duplicate paths",
                    "give each projected item its own path",
                )
            seen.add(path)
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            yield from _token(obj, f"{where}.serviceAccountToken", at, token)


def _token(obj: KubeObject, where: str, at: str, token: Mapping[str, Any]) -> Iterator[Finding]:
    seconds = _whole(token.get("expirationSeconds", TOKEN_DEFAULT_SECONDS))
    if seconds is not None and seconds < TOKEN_MIN_SECONDS:
        yield rejected(
            obj,
            f"has {where}.expirationSeconds {seconds}",
            f"validateProjectionSources: {where}.expirationSeconds: Invalid value: {seconds}: may not specify a "
            "duration less than 10 minutes",
            f"set expirationSeconds to {TOKEN_MIN_SECONDS} or more (the kubelet refreshes the token at 80% of its "
            "life, so a short-lived token still rotates; leave it unset for 3600)",
        )
    elif seconds is not None and seconds > TOKEN_MAX_SECONDS:
        yield rejected(
            obj,
            f"has {where}.expirationSeconds {seconds}",
            f"validateProjectionSources: {where}.expirationSeconds: Invalid value: {seconds}: may not specify a "
            "duration larger than 2^32 seconds",
            "set expirationSeconds to at most 4294967296 (the API server caps a token's life at its "
            "--service-account-max-token-expiration anyway)",
        )
    path = token.get("path")
    if path is None or path == "":
        yield rejected(
            obj,
            f"has {where} without a path",
            f"validateProjectionSources: {at}.path: Required value",
            "give the token a file name relative to the mount, such as token",
        )
    elif isinstance(path, str) and (problem := _path_problem(path)):
        yield rejected(
            obj,
            f"has {where}.path {path!r}",
            f"ValidateLocalNonReservedPath: {at}.path: Invalid value: {problem}",
            "give the token a file name relative to the mount, such as token (set the directory in mountPath)",
        )


def _whole(value: Any) -> int | None:
    """An integer input as Pulumi may send it (a float with no fraction included); None for anything else."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return syntax.integer(value)


def _path_problem(path: str) -> str | None:
    if posixpath.isabs(path):
        return "must be a relative path"
    if ".." in path.split("/"):
        return "must not contain '..'"
    if path.startswith(".."):
        return "must not start with '..'"
    return None


def _mode(obj: KubeObject, at: str, value: Any) -> Iterator[Finding]:
    mode = syntax.integer(value)
    if mode is not None and not 0 <= mode <= MODE_MAX:
        hint = f" (did you mean 0o{mode}, which is {int(str(mode), 8)}?)" if set(str(mode)) <= set("01234567") else ""
        yield rejected(
            obj,
            f"has {at} {mode}, which is {oct(mode)} in octal{hint}",
            f"validateKeyToPathList/defaultMode: Invalid value: {MODE_ERROR}",
            "write the mode in octal in code (0o644 in Python, 420 in decimal JSON/YAML)",
        )


def _items(obj: KubeObject, at: str, items: Any, *, keyed: bool) -> Iterator[Finding]:
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        path = str(item.get("path") or "")
        if keyed and not item.get("key"):
            yield rejected(
                obj,
                f"has an {at}.items entry without a key",
                "validateKeyToPathList: key: Required value",
                "name the ConfigMap or Secret key to project",
            )
        problem = _path_problem(path)
        if problem:
            yield rejected(
                obj,
                f"has {at}.items path {path!r}",
                f"validateLocalNonReservedPath: Invalid value: {problem}",
                "give a path relative to the mount, such as config.yaml or conf/app.yaml (set the directory in "
                "mountPath)",
            )
        yield from _mode(obj, f"{at}.items[{item.get('key') or path}].mode", item.get("mode"))
