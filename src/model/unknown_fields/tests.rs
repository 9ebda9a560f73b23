use super::*;
use serde_json::json;

#[test]
fn typos_are_named_by_their_path() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "a", "lables": {"x": "y"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "busybox"},
                {"name": "d", "image": "busybox", "comand": ["sh"],
                 "livenessProbe": {"httpGet": {"prot": 80}},
                 "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldpath": "x"}}}]}
            ],
            "volumes": [{"name": "v", "emptyDir": {"size": "1Mi"}}],
            "restartpolicy": "Never"
        }
    });
    assert_eq!(
        find(&pod),
        [
            "metadata.lables",
            "spec.containers[1].comand",
            "spec.containers[1].env[0].valueFrom.fieldRef.fieldpath",
            "spec.containers[1].livenessProbe.httpGet.prot",
            "spec.restartpolicy",
            "spec.volumes[0].emptyDir.size",
        ]
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dat": {}});
    assert_eq!(find(&cm), ["dat"]);
    let secret = json!({"kind": "Secret", "stringdata": {}, "type": "Opaque"});
    assert_eq!(find(&secret), ["stringdata"]);
}

#[test]
fn fields_of_a_cluster_manifest_are_known() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "a", "ownerReferences": [{"kind": "ReplicaSet"}],
                     "managedFields": [{"manager": "kubectl"}], "labels": {"any": "key"}},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resizePolicy": [],
                            "resources": {"limits": {"example.com/gpu": 1}}}],
            "tolerations": [{"key": "k", "anything": "goes"}],
            "affinity": {"nodeAffinity": {}},
            "nodeSelector": {"k": "v"},
            "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}]
        },
        "status": {"phase": "Running", "whatever": 1}
    });
    assert!(find(&pod).is_empty(), "{:?}", find(&pod));
    assert!(find(&json!({"kind": "Deployment", "spec": {"x": 1}})).is_empty());
}

#[test]
fn values_of_the_wrong_type_are_left_to_the_decoder() {
    let pod = json!({"kind": "Pod", "metadata": "a", "spec": {"containers": {"c": 1},
        "volumes": [1, null, {"name": "v", "bogus": true}]}});
    assert_eq!(find(&pod), ["spec.volumes[2].bogus"]);
}

#[test]
fn the_answer_is_bounded() {
    let many: serde_json::Map<String, Value> = (0..10_000)
        .map(|i| (format!("f{i:05}"), Value::Null))
        .collect();
    let mut doc = json!({"kind": "Pod", "spec": {"containers": [Value::Object(many)]}});
    let found = find(&doc);
    assert_eq!(found.len(), MAX_REPORTED + 1);
    assert_eq!(found[0], "spec.containers[0].f00000");
    assert_eq!(found[MAX_REPORTED], "... and 9900 more");
    // Deep values under a field not looked into cost nothing.
    let mut deep = Value::Null;
    for _ in 0..100 {
        deep = json!({ "a": deep });
    }
    doc["spec"]["affinity"] = deep;
    assert_eq!(find(&doc).len(), MAX_REPORTED + 1);
}

/// Every field the model decodes is a v1 field of the schema, at the same place: the
/// model's whole field tree (from its own Deserialize impls, see [`every_field`]) has
/// nothing unknown but the fields the model reads only to refuse them.
#[test]
fn every_field_the_model_decodes_is_in_the_schema() {
    let mut pod = every_field::<crate::model::Pod>();
    pod["kind"] = json!("Pod");
    assert_eq!(
        find(&pod),
        [
            // Parsed to be refused by validation (the volume's `defaultMode` applies).
            "spec.volumes[0].projected.sources[0].configMap.defaultMode",
            "spec.volumes[0].projected.sources[0].downwardAPI.defaultMode",
            "spec.volumes[0].projected.sources[0].secret.defaultMode",
        ]
    );
    let mut cm = every_field::<crate::model::ConfigMap>();
    cm["kind"] = json!("ConfigMap");
    assert!(find(&cm).is_empty(), "{:?}", find(&cm));
    let mut secret = every_field::<crate::model::Secret>();
    secret["kind"] = json!("Secret");
    assert!(find(&secret).is_empty(), "{:?}", find(&secret));
}

/// A document with every field `T` decodes (one item per list, one key `k` per map),
/// found by decoding `T` from [`Every`], which offers each field a struct asks for.
fn every_field<T: serde::de::DeserializeOwned>() -> Value {
    let mut doc = Value::Null;
    if let Err(e) = T::deserialize(every::Every(&mut doc)) {
        panic!("{e}: {doc}");
    }
    doc
}

/// A deserializer that gives every type what it asks for and writes it down.
mod every {
    use serde::de::value::StrDeserializer;
    use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess};
    use serde::de::{VariantAccess, Visitor};
    use serde_json::{Map, Value};

    #[derive(Debug)]
    pub struct Error(String);

    impl std::fmt::Display for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Error {}

    impl de::Error for Error {
        fn custom<T: std::fmt::Display>(msg: T) -> Error {
            Error(msg.to_string())
        }
    }

    /// Writes what it offers to the value it holds.
    pub struct Every<'a>(pub &'a mut Value);

    fn name(s: &'static str) -> StrDeserializer<'static, Error> {
        StrDeserializer::new(s)
    }

    impl<'de> Deserializer<'de> for Every<'_> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            *self.0 = Value::from(1);
            v.visit_u64(1)
        }
        fn deserialize_bool<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            *self.0 = Value::from(false);
            v.visit_bool(false)
        }
        fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            *self.0 = Value::from("x");
            v.visit_str("x")
        }
        fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            self.deserialize_str(v)
        }
        fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            v.visit_some(self)
        }
        fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            let mut item = Value::Null;
            let r = v.visit_seq(One(Some(&mut item)));
            *self.0 = Value::Array(vec![item]);
            r
        }
        fn deserialize_map<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
            let mut map = Map::new();
            let r = v.visit_map(Members {
                names: &["k"],
                next: 0,
                map: &mut map,
            });
            *self.0 = Value::Object(map);
            r
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, Error> {
            let mut map = Map::new();
            let r = v.visit_map(Members {
                names: fields,
                next: 0,
                map: &mut map,
            });
            *self.0 = Value::Object(map);
            r
        }
        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _: &'static str,
            variants: &'static [&'static str],
            v: V,
        ) -> Result<V::Value, Error> {
            let first = variants.first().copied().unwrap_or_default();
            *self.0 = Value::from(first);
            v.visit_enum(Variant(first))
        }

        serde::forward_to_deserialize_any! {
            i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit
            unit_struct newtype_struct tuple tuple_struct identifier ignored_any
        }
    }

    /// A list of one item.
    struct One<'a>(Option<&'a mut Value>);

    impl<'de> SeqAccess<'de> for One<'_> {
        type Error = Error;
        fn next_element_seed<T: DeserializeSeed<'de>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, Error> {
            match self.0.take() {
                Some(slot) => seed.deserialize(Every(slot)).map(Some),
                None => Ok(None),
            }
        }
    }

    /// The members `names`, each with what its type asks for.
    struct Members<'a> {
        names: &'static [&'static str],
        next: usize,
        map: &'a mut Map<String, Value>,
    }

    impl<'de> MapAccess<'de> for Members<'_> {
        type Error = Error;
        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            match self.names.get(self.next) {
                Some(n) => seed.deserialize(name(n)).map(Some),
                None => Ok(None),
            }
        }
        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
            let key = self.names.get(self.next).copied().unwrap_or_default();
            self.next += 1;
            let mut slot = Value::Null;
            let r = seed.deserialize(Every(&mut slot));
            self.map.insert(key.to_string(), slot);
            r
        }
    }

    /// An enum's first variant.
    struct Variant(&'static str);

    impl<'de> EnumAccess<'de> for Variant {
        type Error = Error;
        type Variant = Variant;
        fn variant_seed<V: DeserializeSeed<'de>>(
            self,
            seed: V,
        ) -> Result<(V::Value, Variant), Error> {
            Ok((seed.deserialize(name(self.0))?, self))
        }
    }

    impl<'de> VariantAccess<'de> for Variant {
        type Error = Error;
        fn unit_variant(self) -> Result<(), Error> {
            Ok(())
        }
        fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, Error> {
            Err(de::Error::custom("not a unit variant"))
        }
        fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, Error> {
            Err(de::Error::custom("not a unit variant"))
        }
        fn struct_variant<V: Visitor<'de>>(
            self,
            _: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Error> {
            Err(de::Error::custom("not a unit variant"))
        }
    }
}

/// Every pod field the schema accepts is decoded by the model or listed in the node's
/// table of fields honoured, refused or without effect (`node::admit::unsupported`), so
/// that none is dropped in silence. Left out: metadata the node does not read, and volume
/// sources and projections, which validation refuses by name.
#[test]
fn every_pod_field_is_decoded_or_listed() {
    let mut accepted = Vec::new();
    schema_paths(schema::of_kind("Pod").unwrap(), "", &mut accepted);
    let mut decoded = Vec::new();
    value_paths(&every_field::<crate::model::Pod>(), "", &mut decoded);
    let listed: Vec<&str> = crate::node::admit::unsupported::FIELDS
        .iter()
        .map(|(p, _)| *p)
        .collect();
    let unlisted: Vec<&String> = accepted
        .iter()
        .filter(|p| !p.starts_with("metadata.") && !p.starts_with("spec.volumes[]."))
        .filter(|p| !["kind", "apiVersion", "status"].contains(&p.as_str()))
        .filter(|p| !decoded.contains(p))
        .filter(|p| {
            !listed.contains(
                &p.replace("spec.initContainers[]", "spec.containers[]")
                    .as_str(),
            )
        })
        .collect();
    assert!(unlisted.is_empty(), "{unlisted:?}");
    // And the table names only fields the schema has.
    for p in &listed {
        assert!(accepted.iter().any(|a| a == p), "{p}");
    }
}

/// Every field path of `fields` (`[]` for a list's items).
fn schema_paths(fields: &Fields, at: &str, out: &mut Vec<String>) {
    let join = |n: &str| {
        if at.is_empty() {
            n.to_string()
        } else {
            format!("{at}.{n}")
        }
    };
    for n in fields.any.split(' ').filter(|n| !n.is_empty()) {
        out.push(join(n));
    }
    for (n, shape) in fields.nested {
        out.push(join(n));
        match shape {
            Shape::Any => {}
            Shape::Object(inner) => schema_paths(inner, &join(n), out),
            Shape::List(inner) => schema_paths(inner, &format!("{}[]", join(n)), out),
        }
    }
}

/// Every member path of `v` (`[]` for a list's items).
fn value_paths(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(members) => {
            for (n, inner) in members {
                let p = if at.is_empty() {
                    n.clone()
                } else {
                    format!("{at}.{n}")
                };
                out.push(p.clone());
                value_paths(inner, &p, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                value_paths(item, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}
