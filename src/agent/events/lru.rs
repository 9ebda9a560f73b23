//! A map of at most `cap` entries that forgets the least recently used one to make room:
//! the bound on what the spam filter and the aggregator remember per pod, whatever
//! number of pods and reasons comes and goes. Eviction scans the map (a few hundred
//! entries at most, and only when full), which beats keeping a linked order here.

use std::collections::HashMap;
use std::hash::Hash;

/// At most `cap` entries; the least recently used goes first.
pub struct Lru<K, V> {
    map: HashMap<K, (u64, V)>,
    cap: usize,
    tick: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map of at most `cap` (at least 1) entries.
    pub fn new(cap: usize) -> Lru<K, V> {
        Lru {
            map: HashMap::new(),
            cap: cap.max(1),
            tick: 0,
        }
    }

    /// The entry of `key`, made by `make` if missing (forgetting the least recently
    /// used entry when full); it is now the most recently used.
    pub fn get_or_insert_with(&mut self, key: &K, make: impl FnOnce() -> V) -> &mut V {
        self.tick += 1;
        let tick = self.tick;
        if !self.map.contains_key(key) && self.map.len() >= self.cap {
            self.forget_oldest();
        }
        let entry = self
            .map
            .entry(key.clone())
            .or_insert_with(|| (tick, make()));
        entry.0 = tick;
        &mut entry.1
    }

    fn forget_oldest(&mut self) {
        let oldest = self
            .map
            .iter()
            .min_by_key(|(_, (tick, _))| *tick)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.map.remove(&k);
        }
    }

    /// Entries held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether `key` has an entry (without making it recently used).
    #[cfg(test)]
    pub fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::Lru;

    #[test]
    fn full_map_forgets_the_least_recently_used() {
        let mut l: Lru<u32, u32> = Lru::new(2);
        *l.get_or_insert_with(&1, || 10) += 1;
        l.get_or_insert_with(&2, || 20);
        // 1 is used again, so 2 is the least recently used when 3 comes.
        assert_eq!(*l.get_or_insert_with(&1, || 0), 11);
        l.get_or_insert_with(&3, || 30);
        assert_eq!(l.len(), 2);
        assert!(l.contains(&1) && l.contains(&3) && !l.contains(&2));
    }
}
