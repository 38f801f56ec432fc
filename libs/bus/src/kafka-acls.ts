// kafkajs's ACL enums, for the tools that manage principals' ACLs (mesh teams). kafkajs is CommonJS:
// its enums are properties of the module, not named exports an ES module can import.
import kafkajs from 'kafkajs';

export const { AclResourceTypes, AclOperationTypes, AclPermissionTypes, ResourcePatternTypes } = kafkajs;
export type { AclEntry, AclFilter } from 'kafkajs';
