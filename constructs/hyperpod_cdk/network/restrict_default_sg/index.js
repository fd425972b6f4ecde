// Custom resource handler (Node.js 22 Lambda runtime, AWS SDK for JavaScript v3 built in):
// closes the default security group of a new VPC. EC2 creates that group with two rules,
// all traffic in from the group itself and all traffic out to 0.0.0.0/0 (Amazon VPC user
// guide, "Default security groups for your VPCs"); an interface that is given no group
// lands in it. Create removes both rules; Delete puts them back, so the resource's removal
// undoes exactly what it did. CDK's response wrapper (__entrypoint__.js) reports the
// result to CloudFormation.
'use strict';

const {
  EC2Client,
  AuthorizeSecurityGroupEgressCommand,
  AuthorizeSecurityGroupIngressCommand,
  RevokeSecurityGroupEgressCommand,
  RevokeSecurityGroupIngressCommand,
} = require('@aws-sdk/client-ec2');

const ec2 = new EC2Client({});

function defaultRules(groupId, account) {
  return {
    ingress: [{ IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: groupId, UserId: account }] }],
    egress: [{ IpProtocol: '-1', IpRanges: [{ CidrIp: '0.0.0.0/0' }] }],
  };
}

// Runs an EC2 call; an error whose code is in `tolerated` means there is nothing to do.
async function send(command, tolerated) {
  try {
    await ec2.send(command);
  } catch (err) {
    if (!tolerated.includes(err.name)) {
      throw err;
    }
  }
}

async function close(groupId, account) {
  const rules = defaultRules(groupId, account);
  const absent = ['InvalidPermission.NotFound'];
  await send(new RevokeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: rules.ingress }), absent);
  await send(new RevokeSecurityGroupEgressCommand({ GroupId: groupId, IpPermissions: rules.egress }), absent);
}

async function reopen(groupId, account) {
  const rules = defaultRules(groupId, account);
  const present = ['InvalidPermission.Duplicate', 'InvalidGroup.NotFound'];
  await send(new AuthorizeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: rules.ingress }), present);
  await send(new AuthorizeSecurityGroupEgressCommand({ GroupId: groupId, IpPermissions: rules.egress }), present);
}

exports.handler = async (event) => {
  const { DefaultSecurityGroupId: groupId, Account: account } = event.ResourceProperties;
  if (event.RequestType === 'Create') {
    await close(groupId, account);
  } else if (event.RequestType === 'Update') {
    // a new group id is a new physical resource: CloudFormation then deletes the old one
    await close(groupId, account);
  } else if (event.RequestType === 'Delete') {
    await reopen(groupId, account);
  }
  return { PhysicalResourceId: groupId };
};
