"""TargetLoadPacking: pack measured CPU load towards a target utilisation."""
