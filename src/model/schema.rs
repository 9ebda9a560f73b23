//! The field names of the v1 objects a manifest may hold, as the API defines them (up to
//! Kubernetes 1.33), for [`super::unknown_fields`]: a typo (`comand`) is a name no v1
//! object has. Fields tinylet does not read are listed too: a manifest written for a
//! cluster (`tolerations`, `affinity`, `status`) has nothing unknown in it.
//!
//! Only names: types, values and what tinylet supports are the decoder's and the
//! validation's. The objects whose fields tinylet reads are described down to their
//! leaves; a test checks that every field the model decodes is listed here. Names whose
//! values are not looked into are one string per object (a table entry each would cost
//! the binary 32 bytes a name).

/// The fields of one kind of JSON object.
pub struct Fields {
    /// Fields whose value is not looked into (a scalar, a map of the user's keys such as
    /// labels, or a v1 field tinylet does not read), separated by spaces.
    pub any: &'static str,
    /// Fields whose value is an object, or a list of objects, with known fields.
    pub nested: &'static [(&'static str, Shape)],
}

/// What is inside a field's value, as far as names go.
#[derive(Clone, Copy)]
pub enum Shape {
    /// Not looked into.
    Any,
    /// An object with these fields.
    Object(&'static Fields),
    /// A list of objects with these fields.
    List(&'static Fields),
}

impl Fields {
    /// The shape of field `name`, if the object has such a field.
    pub fn get(&self, name: &str) -> Option<Shape> {
        if !name.is_empty() && self.any.split(' ').any(|n| n == name) {
            return Some(Shape::Any);
        }
        self.nested
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }
}

use Shape::{List, Object};

/// The fields of the object of kind `kind` (`Pod`, `ConfigMap`, `Secret`).
pub fn of_kind(kind: &str) -> Option<&'static Fields> {
    match kind {
        "Pod" => Some(&POD),
        "ConfigMap" => Some(&CONFIG_MAP),
        "Secret" => Some(&SECRET),
        _ => None,
    }
}

static POD: Fields = Fields {
    any: "apiVersion kind status",
    nested: &[("metadata", Object(&META)), ("spec", Object(&POD_SPEC))],
};

static CONFIG_MAP: Fields = Fields {
    any: "apiVersion kind immutable data binaryData",
    nested: &[("metadata", Object(&META))],
};

static SECRET: Fields = Fields {
    any: "apiVersion kind immutable data stringData type",
    nested: &[("metadata", Object(&META))],
};

static META: Fields = Fields {
    any: concat!(
        "name generateName namespace selfLink uid resourceVersion generation ",
        "creationTimestamp deletionTimestamp deletionGracePeriodSeconds labels ",
        "annotations ownerReferences finalizers clusterName managedFields",
    ),
    nested: &[],
};

static POD_SPEC: Fields = Fields {
    any: concat!(
        "ephemeralContainers restartPolicy terminationGracePeriodSeconds ",
        "activeDeadlineSeconds dnsPolicy nodeSelector serviceAccountName serviceAccount ",
        "automountServiceAccountToken nodeName hostNetwork hostPID hostIPC ",
        "shareProcessNamespace hostname subdomain affinity schedulerName tolerations ",
        "priorityClassName priority readinessGates runtimeClassName enableServiceLinks ",
        "preemptionPolicy overhead topologySpreadConstraints setHostnameAsFQDN os ",
        "hostUsers schedulingGates resourceClaims resources",
    ),
    nested: &[
        ("volumes", List(&VOLUME)),
        ("initContainers", List(&CONTAINER)),
        ("containers", List(&CONTAINER)),
        ("securityContext", Object(&POD_SECURITY)),
        ("imagePullSecrets", List(&NAME_REF)),
        ("hostAliases", List(&HOST_ALIAS)),
        ("dnsConfig", Object(&DNS_CONFIG)),
    ],
};

static POD_SECURITY: Fields = Fields {
    any: concat!(
        "seLinuxOptions windowsOptions runAsUser runAsGroup runAsNonRoot ",
        "supplementalGroups supplementalGroupsPolicy fsGroup fsGroupChangePolicy ",
        "seLinuxChangePolicy",
    ),
    nested: &[
        ("sysctls", List(&NAME_VALUE)),
        ("seccompProfile", Object(&PROFILE)),
        ("appArmorProfile", Object(&PROFILE)),
    ],
};

static NAME_REF: Fields = Fields {
    any: "name",
    nested: &[],
};
static NAME_VALUE: Fields = Fields {
    any: "name value",
    nested: &[],
};
static HOST_ALIAS: Fields = Fields {
    any: "ip hostnames",
    nested: &[],
};
static DNS_CONFIG: Fields = Fields {
    any: "nameservers searches",
    nested: &[("options", List(&NAME_VALUE))],
};

static CONTAINER: Fields = Fields {
    any: concat!(
        "name image command args workingDir resizePolicy restartPolicy volumeDevices ",
        "terminationMessagePath terminationMessagePolicy imagePullPolicy stdin stdinOnce ",
        "tty",
    ),
    nested: &[
        ("ports", List(&PORT)),
        ("envFrom", List(&ENV_FROM)),
        ("env", List(&ENV)),
        ("resources", Object(&RESOURCES)),
        ("volumeMounts", List(&VOLUME_MOUNT)),
        ("livenessProbe", Object(&PROBE)),
        ("readinessProbe", Object(&PROBE)),
        ("startupProbe", Object(&PROBE)),
        ("lifecycle", Object(&LIFECYCLE)),
        ("securityContext", Object(&SECURITY)),
    ],
};

static PORT: Fields = Fields {
    any: "name hostPort containerPort protocol hostIP",
    nested: &[],
};

static ENV: Fields = Fields {
    any: "name value",
    nested: &[("valueFrom", Object(&ENV_SOURCE))],
};

static ENV_SOURCE: Fields = Fields {
    any: "",
    nested: &[
        ("fieldRef", Object(&FIELD_REF)),
        ("resourceFieldRef", Object(&RESOURCE_REF)),
        ("configMapKeyRef", Object(&KEY_REF)),
        ("secretKeyRef", Object(&KEY_REF)),
    ],
};

static FIELD_REF: Fields = Fields {
    any: "apiVersion fieldPath",
    nested: &[],
};
static RESOURCE_REF: Fields = Fields {
    any: "containerName resource divisor",
    nested: &[],
};
static KEY_REF: Fields = Fields {
    any: "name key optional",
    nested: &[],
};
static OPTIONAL_REF: Fields = Fields {
    any: "name optional",
    nested: &[],
};

static ENV_FROM: Fields = Fields {
    any: "prefix",
    nested: &[
        ("configMapRef", Object(&OPTIONAL_REF)),
        ("secretRef", Object(&OPTIONAL_REF)),
    ],
};

static RESOURCES: Fields = Fields {
    any: "limits requests claims",
    nested: &[],
};

static VOLUME_MOUNT: Fields = Fields {
    any: "name readOnly recursiveReadOnly mountPath subPath mountPropagation subPathExpr",
    nested: &[],
};

static PROBE: Fields = Fields {
    any: concat!(
        "initialDelaySeconds timeoutSeconds periodSeconds successThreshold ",
        "failureThreshold terminationGracePeriodSeconds",
    ),
    nested: &[
        ("exec", Object(&EXEC)),
        ("httpGet", Object(&HTTP_GET)),
        ("tcpSocket", Object(&TCP_SOCKET)),
        ("grpc", Object(&GRPC)),
    ],
};

static EXEC: Fields = Fields {
    any: "command",
    nested: &[],
};
static HTTP_GET: Fields = Fields {
    any: "path port host scheme",
    nested: &[("httpHeaders", List(&NAME_VALUE))],
};
static TCP_SOCKET: Fields = Fields {
    any: "port host",
    nested: &[],
};
static GRPC: Fields = Fields {
    any: "port service",
    nested: &[],
};

static LIFECYCLE: Fields = Fields {
    any: "stopSignal",
    nested: &[
        ("postStart", Object(&HANDLER)),
        ("preStop", Object(&HANDLER)),
    ],
};

static HANDLER: Fields = Fields {
    any: "",
    nested: &[
        ("exec", Object(&EXEC)),
        ("httpGet", Object(&HTTP_GET)),
        ("tcpSocket", Object(&TCP_SOCKET)),
        ("sleep", Object(&SLEEP)),
    ],
};
static SLEEP: Fields = Fields {
    any: "seconds",
    nested: &[],
};

static SECURITY: Fields = Fields {
    any: concat!(
        "privileged seLinuxOptions windowsOptions runAsUser runAsGroup runAsNonRoot ",
        "readOnlyRootFilesystem allowPrivilegeEscalation procMount",
    ),
    nested: &[
        ("capabilities", Object(&CAPABILITIES)),
        ("seccompProfile", Object(&PROFILE)),
        ("appArmorProfile", Object(&PROFILE)),
    ],
};

static CAPABILITIES: Fields = Fields {
    any: "add drop",
    nested: &[],
};
static PROFILE: Fields = Fields {
    any: "type localhostProfile",
    nested: &[],
};

static VOLUME: Fields = Fields {
    any: concat!(
        "name gcePersistentDisk awsElasticBlockStore gitRepo nfs iscsi glusterfs rbd ",
        "flexVolume cinder cephfs flocker fc azureFile vsphereVolume quobyte azureDisk ",
        "photonPersistentDisk portworxVolume scaleIO storageos csi ephemeral image",
    ),
    nested: &[
        ("hostPath", Object(&HOST_PATH)),
        ("emptyDir", Object(&EMPTY_DIR)),
        ("secret", Object(&SECRET_VOLUME)),
        ("configMap", Object(&CONFIG_MAP_VOLUME)),
        ("projected", Object(&PROJECTED)),
        ("downwardAPI", Object(&DOWNWARD_API_VOLUME)),
        ("persistentVolumeClaim", Object(&CLAIM)),
    ],
};

static HOST_PATH: Fields = Fields {
    any: "path type",
    nested: &[],
};
static EMPTY_DIR: Fields = Fields {
    any: "medium sizeLimit",
    nested: &[],
};
static CLAIM: Fields = Fields {
    any: "claimName readOnly",
    nested: &[],
};
static KEY_TO_PATH: Fields = Fields {
    any: "key path mode",
    nested: &[],
};

static SECRET_VOLUME: Fields = Fields {
    any: "secretName defaultMode optional",
    nested: &[("items", List(&KEY_TO_PATH))],
};

static CONFIG_MAP_VOLUME: Fields = Fields {
    any: "name defaultMode optional",
    nested: &[("items", List(&KEY_TO_PATH))],
};

static PROJECTED: Fields = Fields {
    any: "defaultMode",
    nested: &[("sources", List(&PROJECTION))],
};

static PROJECTION: Fields = Fields {
    any: "clusterTrustBundle podCertificate",
    nested: &[
        ("secret", Object(&KEY_PROJECTION)),
        ("configMap", Object(&KEY_PROJECTION)),
        ("downwardAPI", Object(&DOWNWARD_API_PROJECTION)),
        ("serviceAccountToken", Object(&TOKEN_PROJECTION)),
    ],
};

static KEY_PROJECTION: Fields = Fields {
    any: "name optional",
    nested: &[("items", List(&KEY_TO_PATH))],
};

static DOWNWARD_API_PROJECTION: Fields = Fields {
    any: "",
    nested: &[("items", List(&DOWNWARD_API_FILE))],
};

static DOWNWARD_API_VOLUME: Fields = Fields {
    any: "defaultMode",
    nested: &[("items", List(&DOWNWARD_API_FILE))],
};

static DOWNWARD_API_FILE: Fields = Fields {
    any: "path mode",
    nested: &[
        ("fieldRef", Object(&FIELD_REF)),
        ("resourceFieldRef", Object(&RESOURCE_REF)),
    ],
};

static TOKEN_PROJECTION: Fields = Fields {
    any: "audience expirationSeconds path",
    nested: &[],
};
