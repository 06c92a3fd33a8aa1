"""Tests of controller.cap.tenant_operations, callbacks and application_retirement."""
