//! One machine's description as JSON: the preset's parameters plus the placement the model
//! derives from them (active tiles, vCPU -> core -> tile, each quadrant's memory controllers).
//! The gem5 tier builds its Ruby/Garnet system from this, so both tiers read one preset.

use crate::json;
use crate::memory::DeviceKind;
use crate::params::{positions_text, Params};
use crate::topology::Topology;
use serde::Serialize;

#[derive(Serialize)]
struct Description<'a> {
    machine: &'a Params,
    vcpus: usize,
    /// Each active tile's position, in tile order.
    tiles: String,
    vcpu_core: &'a [u16],
    core_tile: Vec<usize>,
    ddr_mc_of_quadrant: String,
    mcdram_mc_of_quadrant: String,
}

pub fn machine_json(p: &Params, vcpus: usize) -> Result<String, String> {
    p.validate(vcpus)?;
    let topo = Topology::new(p, vcpus);
    let mc_of_quadrant = |kind| positions_text(&(0..4).map(|q| topo.mc_of_quadrant(kind, q)).collect::<Vec<_>>());
    Ok(json::to_text(&Description {
        machine: p,
        vcpus,
        tiles: positions_text(&topo.tile_pos),
        vcpu_core: &topo.vcpu_core,
        core_tile: (0..topo.n_cores).map(|core| topo.core_tile(core)).collect(),
        ddr_mc_of_quadrant: mc_of_quadrant(DeviceKind::Dram),
        mcdram_mc_of_quadrant: mc_of_quadrant(DeviceKind::Mcdram),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::preset;

    #[test]
    fn knl_64_describes_32_tiles_and_scatter_numbering() {
        let text = machine_json(&preset("knl-64").unwrap(), 4).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["machine"]["mesh.rows"], 6);
        assert_eq!(v["tiles"].as_str().unwrap().split('/').count(), 32);
        assert!(!v["tiles"].as_str().unwrap().split('/').any(|t| t == "1:1"));
        // Scatter: vCPU i on core i, cores 2t and 2t+1 on tile t.
        assert_eq!(v["vcpu_core"], serde_json::json!([0, 1, 2, 3]));
        assert_eq!(v["core_tile"].as_array().unwrap().len(), 64);
        assert_eq!(v["core_tile"][3], 1);
        assert_eq!(v["ddr_mc_of_quadrant"].as_str().unwrap().split('/').count(), 4);
    }

    #[test]
    fn the_description_carries_each_chips_hierarchy() {
        let v = |name: &str| -> serde_json::Value {
            serde_json::from_str(&machine_json(&preset(name).unwrap(), 4).unwrap()).unwrap()
        };
        let altra = v("altra-80");
        let tiles: Vec<&str> = altra["tiles"].as_str().unwrap().split('/').collect();
        let mut sites = tiles.clone();
        sites.dedup();
        assert_eq!(
            (tiles.len(), sites.len(), &altra["machine"]["mesh.tiles_per_site"]),
            (80, 20, &serde_json::json!(4))
        );
        assert_eq!(altra["machine"]["llc.size_kib"], 410);
        assert_eq!(v("icelake-32")["machine"]["llc.size_kib"], 1536);
        let epyc = v("epyc2-64");
        assert_eq!(
            (epyc["machine"]["protocol"].as_str(), epyc["machine"]["dir.home"].as_str()),
            (Some("moesif"), Some("mc"))
        );
        assert_eq!(v("knl-64")["machine"]["llc.policy"], "none");
    }

    #[test]
    fn too_many_vcpus_is_an_error() {
        assert!(machine_json(&preset("tiny-4").unwrap(), 5).is_err());
    }
}
