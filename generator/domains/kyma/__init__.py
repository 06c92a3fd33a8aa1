"""The parts of the Kyma modules domain (generator.domains.kyma_modules is the entry point).

model        typed views of Kyma, ModuleTemplate and ModuleReleaseMeta source documents
catalog      the module catalog: templates and release metas, and its own consistency rules
resolution   a Kyma's module entry -> one template, by ModuleReleaseMeta or by channel
maintenance  maintenance window policies (Lifecycle Manager's JSON format)
record       the versions a previous render resolved, kept beside the apps
status       module and Kyma states, in the shape of the Kyma CR's status
content      a resolved module -> its objects and default CR, labelled and ordered
"""
