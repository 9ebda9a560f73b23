//! Image references as pods write them (`gc::image_ref`: normalization to containerd's
//! names and lookup among the runtime's images). Properties: no panic; normalizing adds
//! at most a registry, `library/` and `:latest`, and is idempotent; a reference always
//! finds an image listed under its normalized name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::cri::pb;
use tinylet::gc::image_ref::{normalize, ImageIndex};

/// `docker.io/` + `library/` + `:latest`.
const MAX_ADDED: usize = 10 + 8 + 7;

fuzz_target!(|data: &[u8]| {
    let Ok(reference) = std::str::from_utf8(data) else {
        return;
    };
    let norm = normalize(reference);
    assert!(
        norm.len() <= reference.len() + MAX_ADDED,
        "{reference:?} -> {norm:?}"
    );
    assert_eq!(normalize(&norm), norm, "not idempotent on {reference:?}");
    let listed = [pb::Image {
        id: "sha256:fuzz".into(),
        repo_tags: vec![norm.clone()],
        ..Default::default()
    }];
    let found = ImageIndex::new(&listed).resolve(reference);
    if !reference.is_empty() {
        assert_eq!(
            found,
            Some("sha256:fuzz"),
            "{reference:?} (listed as {norm:?})"
        );
    }
});
