-- :checkhealth flemma_sandbox looks here; the checks live in flemma.sandbox.health.
return require("flemma.sandbox.health")
