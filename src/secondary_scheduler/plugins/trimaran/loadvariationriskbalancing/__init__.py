"""LoadVariationRiskBalancing: balance mean load plus its variability across nodes."""
