//! The agent's config (`Config::parse`). Properties: no panic; an accepted config,
//! printed as `check-config` prints it, parses back to the same config.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tinylet::config::Config;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = Config::parse(text) {
        let printed = cfg.to_pretty_json();
        let again = Config::parse(&printed)
            .unwrap_or_else(|e| panic!("own output refused: {e}\n{printed}"));
        assert_eq!(again, cfg, "round trip changed the config:\n{printed}");
    }
});
